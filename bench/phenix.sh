#!/usr/bin/env bash
# The PHENIX scenario at a compressed clock: a DAQ writes at a steady rate into a bounded archive buffer
# while it is flushed to tape (simulated LTO-9 library on a virtual clock, bytes scaled down 10,000x, as
# bench/archive.sh) and replicated by a rule per dataset to a remote site (a loopback Globus GridFTP
# server; real transfers through the service's replication engine and transfer queue). Files leave the
# buffer only once archived and replicated. Prints producer, flush and replication rates side by side,
# the buffer's peak against its high-water mark, the 503 count and the end state.
#   bench/phenix.sh [producer-MB/s] [seconds] [write-drives] [datasets] [file-GB] [buffer-GB] [flush-min-GB] [compression]
#   (defaults 250 1800 2 2 2 500 20 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.PhenixBench -Dexec.args="${*:-250 1800 2 2 2 500 20 20}"
