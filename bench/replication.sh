#!/usr/bin/env bash
# The replication engine's pass at scale: D datasets x F files, every copy verified at one site under
# continuous rules, then a tenth each waiting, transferring and staging for two other sites. Prints the pass
# time with nothing to do, with that open work, after one transfer ended and with a file added before each.
#   bench/replication.sh [datasets] [files-per-dataset]   (defaults 1000 1000: 10^6 files)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.ReplicationPassBench -Dexec.args="${*:-1000 1000}"
