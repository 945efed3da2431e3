#!/usr/bin/env bash
# GridFTP movers vs globus-url-copy on one loopback globus-gridftp-server; cp as the machine's limit.
#   bench/gridftp.sh [rounds] [big|mixed|small ...]     (default: 3 rounds, all three sets)
# Needs globus-gridftp-server-progs and globus-gass-copy-progs; data (~6 GB at most at once) goes under
# /work/.bench-gridftp and is deleted afterwards.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$HERE"
for j in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-21-jdk-amd64; do
  [ -n "$j" ] && [ -x "$j/bin/javac" ] && export JAVA_HOME="$j" && break
done
df -h "${BENCH_DIR:-/work}" >&2
ROUNDS="${1:-3}"; shift || true
mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.GridFtpBench \
  -Dexec.args="${BENCH_DIR:-/work}/.bench-gridftp $ROUNDS $*"
