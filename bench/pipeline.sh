#!/usr/bin/env bash
# Pipeline overlap benchmark: tape reads into the disk cache while a drain empties it; end-to-end time vs the
# slowest stage alone vs the sum of the stages (simulated library on a virtual clock, real PostgreSQL and cache).
#   bench/pipeline.sh [volumes] [files-per-volume] [file-bytes] [drain-bytes/s] [cache-files]   (defaults 4 20 5000000 300000 20)
set -euo pipefail
cd "$(dirname "$0")/.."
# Same JDK choice as ./stagehand: the newest JDK >= 21 ($JAVA_HOME first).
best=""; best_v=0
for d in ${JAVA_HOME:-} /usr/lib/jvm/*; do
  [ -x "$d/bin/javac" ] || continue
  v=$("$d/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}' | cut -d. -f1)
  if [ "${v:-0}" -ge 21 ] && [ "$v" -gt "$best_v" ]; then best="$d"; best_v="$v"; fi
done
[ -n "$best" ] || { echo "no JDK >= 21 found" >&2; exit 1; }
export JAVA_HOME="$best"
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.PipelineBench -Dexec.args="${*:-4 20 5000000 300000 20}"
