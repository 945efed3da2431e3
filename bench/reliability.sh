#!/usr/bin/env bash
# Fault-injection suite (issue 9): the service as separate processes against its own PostgreSQL, a loopback
# GridFTP destination and the simulated library; kill -9 at seeded random points, PostgreSQL stopped 20 s,
# destination stopped/killed, tape faults, a full cache, two instances with a takeover. Prints one report
# line per scenario (also in target/reliability-report.txt).
#   bench/reliability.sh [seed]        (seed of the kill -9 points; default: the clock, printed)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
start=$(date +%s)
status=0
mvn -B -q verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false \
    -Dit.test='dev/stagehand/reliability/*IT' ${1:+-Dfaults.seed=$1} || status=$?
echo "--- reliability report ($(( $(date +%s) - start )) s wall incl. build; load average $(cut -d' ' -f1-3 /proc/loadavg))"
cat target/reliability-report.txt 2>/dev/null || echo "no report written"
exit $status
