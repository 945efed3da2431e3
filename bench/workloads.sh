# Sourced by the recall benchmarks: finds a JDK >= 21, the shared workloads (W) and generates workloads on
# demand into target/bench-workloads (gen KIND SEED FILES prints the file's path).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$HERE"
. "$HERE/scripts/jdk.sh"; find_jdk
W=/work/shared/workloads
[ -d "$W" ] || W="$HERE/../shared/workloads"
GEN="$HERE/target/bench-workloads"
mkdir -p "$GEN"
gen() { # gen KIND SEED FILES
  local f="$GEN/$1-s$2-$3.csv"
  [ -f "$f" ] || python3 "$W/generate.py" "$1" --seed "$2" --files "$3" --out "$f"
  echo "$f"
}
