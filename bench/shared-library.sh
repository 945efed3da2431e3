#!/usr/bin/env bash
# Two service instances sharing one tape library (SharedDrives, leases in PostgreSQL; a simulated LTO-9 library on a
# scaled real clock behind the script driver): a bulk recall on two instances and on one with every drive, alternating,
# each round. Makespan, mounts, remounts, empty mounts, accessor waits, most mounts under way (model seconds; bytes
# scaled down 1000x with the read rate, times as LTO-9). About 1 min a run at x60.
#   bench/shared-library.sh [volumes] [drives] [accessors] [rounds] [speed]     (defaults 64 8 1 3 60)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.SharedLibraryBench -Dexec.args="$*"
