# Sourced by the bench scripts: picks a JDK >= 21 like ./stagehand does (the machine's default java may be older).
if [ -z "${JAVA_HOME:-}" ] || ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then
  for d in /usr/lib/jvm/*; do
    if [ -x "$d/bin/javac" ] && "$d/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then JAVA_HOME="$d"; fi
  done
fi
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
