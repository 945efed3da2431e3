#!/usr/bin/env bash
# Catalog import benchmark: a deterministic 1,000,000-row HSM dump into an empty catalog (database
# stagehand_bench of the private cluster under target/pg), then re-imported. Usage: bench/catalog-import.sh [rows] [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dstagehand.db.local-dir=target/pg \
  -Dexec.mainClass=dev.stagehand.bench.CatalogImportBench -Dexec.args="${1:-1000000} ${2:-42}"
