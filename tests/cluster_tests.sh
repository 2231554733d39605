#!/bin/bash
# The tests that need real cluster software, after the README's test command (which makes .venv):
#   1. the Slurm scripts under a real Slurm (slurm/local-cluster.sh starts and stops it);
#   2. the MPI tests again with a second MPI: Debian's Open MPI, mpi4py built against it, in its
#      own virtual environment .venv-openmpi (no mpich wheel there: its mpiexec is Open MPI's).
# Run as root (or with the Debian packages installed): missing packages are installed with
# apt-get, or named in the error; these tests are never skipped.
#
#   bash tests/cluster_tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x .venv/bin/pytest ]] || { echo "cluster tests: run the README's test command first (it makes .venv)" >&2; exit 2; }

echo "== a real Slurm: the sbatch scripts, srun, yewpy scaling --launcher srun" >&2
.venv/bin/pytest -m cluster tests/test_cluster_slurm.py

echo "== Open MPI: the MPI tests with mpi4py built against Debian's Open MPI" >&2
if [[ ! -x /usr/bin/mpicc.openmpi || ! -x /usr/bin/mpiexec.openmpi ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libopenmpi-dev openmpi-bin >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libopenmpi-dev openmpi-bin >/dev/null; } \
      || { echo "cluster tests: apt-get install libopenmpi-dev openmpi-bin failed" >&2; exit 3; }
  else
    echo "cluster tests: missing Debian's libopenmpi-dev and openmpi-bin (apt-get install as root)" >&2
    exit 3
  fi
fi
if [[ ! -x .venv-openmpi/bin/python ]]; then
  python3 -m venv .venv-openmpi
fi
if ! .venv-openmpi/bin/python -c "import mpi4py.MPI as M, sys; sys.exit('Open MPI' not in M.Get_library_version())" 2>/dev/null; then
  MPICC=/usr/bin/mpicc.openmpi .venv-openmpi/bin/pip install -q --no-cache-dir --no-binary mpi4py --force-reinstall mpi4py
fi
.venv-openmpi/bin/pip install -q ".[testtools]"
ln -sf /usr/bin/mpiexec.openmpi .venv-openmpi/bin/mpiexec      # "the mpiexec beside this Python"
.venv-openmpi/bin/python -c "import mpi4py.MPI as M; print('mpi4py on', M.Get_library_version().splitlines()[0])" >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1     # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1                          # 4-64 ranks on 2 cores
export OMPI_MCA_btl_vader_single_copy_mechanism=none                # no ptrace/CMA in containers
.venv-openmpi/bin/pytest tests/test_mpi.py tests/test_mpi_stealing.py tests/test_faults.py tests/test_checkpoint.py
.venv-openmpi/bin/pytest tests/test_jit.py -k "mpi_ranks or another_rank"    # @yewpy.jit on real ranks
