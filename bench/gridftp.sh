#!/usr/bin/env bash
# GridFTP movers vs globus-url-copy on one loopback globus-gridftp-server; cp as the machine's limit.
#   bench/gridftp.sh [rounds] [big|mixed|small ...]     (default: 3 rounds, all three sets)
# Needs globus-gridftp-server-progs and globus-gass-copy-progs; data (~6 GB at most at once) goes under
# /work/.bench-gridftp and is deleted afterwards. Each row prints the 1- and 5-minute load averages: other work
# on the machine moves every figure. For experiments: -Dgridftp.tools=stagehand,-pp (only tools whose names
# contain a word), -Dgridftp.skip=verify-checksum (leave those out), -Dgridftp.c=N and -Dgridftp.p=N (Stagehand
# connections and streams), -Dgridftp.split=BYTES, -Dgridftp.extra=1x4,4x1,4x2+verified (more Stagehand rows:
# connections x streams), passed in MAVEN_OPTS. Rounds interleave the tools; each row
# gives the best time and the least CPU (client + the server's per-connection processes) over the rounds.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$HERE"
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
df -h "${BENCH_DIR:-/work}" >&2
ROUNDS="${1:-3}"; shift || true
mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.GridFtpBench \
  -Dexec.args="${BENCH_DIR:-/work}/.bench-gridftp $ROUNDS $*"
