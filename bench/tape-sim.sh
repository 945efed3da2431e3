#!/usr/bin/env bash
# Event throughput of the simulated tape library on the virtual clock.
#   bench/tape-sim.sh [files] [volumes] [drives] [accessors]     (defaults 100000 2000 8 2)
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.TapeSimBench -Dexec.args="$*"
