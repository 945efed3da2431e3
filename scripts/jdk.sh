# Sourced by ./stagehand and the bench scripts: find_jdk exports JAVA_HOME (and PATH) for the newest JDK
# >= 21 among $JAVA_HOME and /usr/lib/jvm/* (the machine's default java may be older).
java_major() { # prints the major version of the java binary $1
  "$1" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}' | cut -d. -f1
}

find_jdk() {
  local candidates=()
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  for d in /usr/lib/jvm/*; do [ -d "$d" ] && candidates+=("$d"); done
  local best="" best_v=0
  for c in "${candidates[@]}"; do
    [ -x "$c/bin/java" ] && [ -x "$c/bin/javac" ] || continue
    local v; v=$(java_major "$c/bin/java" || echo 0)
    if [ "${v:-0}" -ge 21 ] && [ "$v" -gt "$best_v" ]; then best="$c"; best_v="$v"; fi
  done
  if [ -z "$best" ]; then
    echo "stagehand: no JDK >= 21 found (looked at \$JAVA_HOME and /usr/lib/jvm/*). Install one, e.g. 'apt-get install openjdk-21-jdk'." >&2
    exit 1
  fi
  export JAVA_HOME="$best"
  export PATH="$JAVA_HOME/bin:$PATH"
}
