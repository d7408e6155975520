#!/bin/sh
# examples/mesh_write as mpirun and srun start it: two processes that know
# their rank only from Open MPI's, Slurm's or PMI's variables, and rank 0's
# address from KINET_ROOT (what the guide tells users to pass).  Neither
# launcher is needed: the variables are set here.
# Usage: test_launcher_env.sh MESH_WRITE
set -u
PROG=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

# job NAME RANKVAR SIZEVAR [VAR=VALUE...]: both ranks, with a fresh port
# (another try on another port if it was taken).
job() {
	name=$1 rvar=$2 svar=$3
	shift 3
	for try in 1 2 3; do
		port=$((20000 + ($$ * 7 + try * 1009) % 20000))
		env "$rvar=0" "$svar=2" KINET_ROOT=127.0.0.1:$port "$@" "$PROG" >"$TMP/0" 2>&1 &
		pid=$!
		env "$rvar=1" "$svar=2" KINET_ROOT=127.0.0.1:$port "$@" "$PROG" >"$TMP/1" 2>&1
		rc1=$?
		wait $pid
		rc0=$?
		if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then
			echo "ok: $name"
			return
		fi
		grep -qi "address already in use" "$TMP/0" || break
	done
	echo "FAIL: $name (exit $rc0, $rc1)"
	sed 's/^/    rank 0: /' "$TMP/0"
	sed 's/^/    rank 1: /' "$TMP/1"
	failed=1
}

job "Open MPI variables" OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_SIZE=2
job "Slurm variables" SLURM_PROCID SLURM_NTASKS SLURM_NNODES=1
job "PMI variables" PMI_RANK PMI_SIZE
exit $failed
