"""The MPI tags of the work-stealing protocols, and which of them count as stealing traffic."""

STEAL, WORK, NOWORK, INCUMBENT, STOP, WAVE, ECHO, CHECKPOINT, PARTS, RESUME, PROGRESS = range(1, 12)
KIND_OF_TAG = {STEAL: "steal", NOWORK: "steal", WORK: "work"}   # every other tag is control
