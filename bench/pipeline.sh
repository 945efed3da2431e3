#!/usr/bin/env bash
# Pipeline overlap benchmark: the whole service recalls files from the simulated LTO-9 library (scaled clock)
# into the disk cache while its GridFTP movers send them to a loopback globus-gridftp-server; end-to-end time
# vs each stage alone, the sum of the stages and the bound an ideal pipeline reaches (slowest stage + the first
# file's tape time + one file's transfer), all wall-clock, and where the pipeline's time goes (per-file hand-off,
# claim, transfer and collect waits; drives idle waiting for cache space). Needs globus-gridftp-server-progs.
#   bench/pipeline.sh [volumes] [files-per-volume] [file-bytes] [clock-scale] [cache-%] [byte-scale]
#   (defaults 4 20 5000000 60 25 1000). byte-scale divides the drive's rate: with 1000 a 5 MB file reads like a
#   5 GB one, so the tape stage is paced by the tape model (a drive costs the host no CPU) rather than by this
#   machine's disk and CPU; with 1 the simulated drives read as fast as this machine can write the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.PipelineBench -Dexec.args="${*:-4 20 5000000 60 25 1000}"
