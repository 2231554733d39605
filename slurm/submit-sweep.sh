#!/bin/bash
# Submit slurm/scaling-sweep.sbatch right-sized: one array task per node count, each asking for
# exactly its nodes (a single array job would hold the largest count for every task), then a job
# that merges their tables once all have succeeded.
#
#   NODE_COUNTS="1 2 4 8 16" slurm/submit-sweep.sh maxclique brock400_4.clq
#
# Takes the sweep's environment (NODE_COUNTS, REPEAT, SKELETONS, SCALING_ARGS, SCALING_OUT,
# MPI_PLUGIN, YEWPY_MODULES, YEWPY_VENV); sbatch passes it on to the jobs. SWEEP_SBATCH_ARGS adds
# sbatch flags to every array task (e.g. "--ntasks-per-node=8 --partition=short"). Prints the
# merge job id.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
read -r -a counts <<< "${NODE_COUNTS:-1 2 4 8}"
export NODE_COUNTS="${counts[*]}"
export SCALING_OUT="${SCALING_OUT:-$PWD/scaling-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$SCALING_OUT"                       # the merge job's log goes there
ids=()
for i in "${!counts[@]}"; do
  # shellcheck disable=SC2086 # SWEEP_SBATCH_ARGS is a list of flags
  id=$(sbatch --parsable --array="$i" --nodes="${counts[$i]}" ${SWEEP_SBATCH_ARGS:-} "$here/scaling-sweep.sbatch" "$@")
  ids+=("${id%%;*}")                          # --parsable prints "jobid[;cluster]"
done
dependency=$(IFS=:; echo "afterok:${ids[*]}")
out=$(printf %q "$SCALING_OUT")
echo "sweep jobs ${ids[*]} write $SCALING_OUT/nodes-N; merging after they succeed" >&2
# the merge job's script, in bash (sbatch --wrap would run it with /bin/sh, which has no `source`)
sbatch --parsable --dependency="$dependency" --job-name=yewpy-merge --nodes=1 --ntasks=1 \
  --time=00:10:00 --output="$SCALING_OUT/merge-%j.out" <<EOF
#!/bin/bash
set -euo pipefail
${YEWPY_MODULES:+module load ${YEWPY_MODULES}}
${YEWPY_VENV:+source $(printf %q "$YEWPY_VENV")/bin/activate}
yewpy scaling --merge $out/nodes-* --out $out
EOF
