#!/usr/bin/env bash
# A directory-backed "tape library" for Stagehand's script driver: a working example of the protocol in
# README.md, and what the integration test drives. Volumes are directories, segments files in them named
# by their byte offset. Layout under ROOT:
#   slots/VOLUME/OFFSET      a volume in its slot, with its segments
#   drives/DRIVE/VOLUME/     a volume mounted in DRIVE (moved there by mount, back by dismount)
#   drives/DRIVE.broken      makes every call on DRIVE fail as a drive failure (exit 3)
#   slow                     if present, read sleeps this many seconds before each file (timeout tests)
#
# Usage: dirlib.sh ROOT mount    DRIVE VOLUME
#        dirlib.sh ROOT read     DRIVE VOLUME LIST    LIST: fileId TAB offset TAB size TAB target TAB name
#        dirlib.sh ROOT write    DRIVE VOLUME LIST    LIST: fileId TAB size TAB source TAB name
#        dirlib.sh ROOT dismount DRIVE VOLUME
# Output: one line per file, "OK fileId" (read), "OK fileId offset" (write) or "ERR fileId KIND message".
# Exit codes: 0 ok, 2 media error, 3 drive failure, 4 volume unavailable, 5 timeout.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: $0 ROOT mount|read|write|dismount DRIVE VOLUME [LIST]" >&2; exit 64; }
root=$1 verb=$2 drive=$3 volume=$4 list=${5:-}
slots=$root/slots
drives=$root/drives
mkdir -p "$slots" "$drives/$drive"

if [ -e "$drives/$drive.broken" ]; then echo "drive $drive is broken" >&2; exit 3; fi
mounted=$drives/$drive/$volume

case "$verb" in
  mount)
    if [ -n "$(ls -A "$drives/$drive")" ]; then echo "drive $drive is not empty" >&2; exit 3; fi
    if [ ! -d "$slots/$volume" ]; then echo "volume $volume is not in the library" >&2; exit 4; fi
    mv "$slots/$volume" "$mounted" || exit 3
    ;;
  read)
    if [ ! -d "$mounted" ]; then echo "volume $volume is not mounted in $drive" >&2; exit 3; fi
    if [ -n "${STAGEHAND_READ_METADATA:-}" ]; then
      # what clients addressed to this site per file (WLCG targetedMetadata, e.g. an activity a real HSM would
      # schedule by); this library only logs it
      while IFS=$'\t' read -r id meta; do echo "$volume $id $meta"; done < "$STAGEHAND_READ_METADATA" >> "$root/read-metadata.log"
    fi
    while IFS=$'\t' read -r id offset size target name; do
      [ -n "$id" ] || continue
      if [ -f "$root/slow" ]; then sleep "$(cat "$root/slow")"; fi
      seg=$mounted/$offset
      if [ ! -f "$seg" ]; then echo "ERR $id MEDIA_ERROR no segment at offset $offset for $name"; continue; fi
      if [ "$(stat -c %s "$seg")" != "$size" ]; then echo "ERR $id MEDIA_ERROR segment at $offset is not $size bytes"; continue; fi
      mkdir -p "$(dirname "$target")"
      if cp "$seg" "$target"; then echo "OK $id"; else echo "ERR $id MEDIA_ERROR cannot copy to $target"; fi
    done < "$list"
    ;;
  write)
    if [ ! -d "$mounted" ]; then echo "volume $volume is not mounted in $drive" >&2; exit 3; fi
    eod=0 # end of data: the end of the last segment
    for seg in "$mounted"/*; do
      [ -f "$seg" ] || continue
      end=$(( $(basename "$seg") + $(stat -c %s "$seg") ))
      [ "$end" -gt "$eod" ] && eod=$end
    done
    while IFS=$'\t' read -r id size source name; do
      [ -n "$id" ] || continue
      if cp "$source" "$mounted/$eod"; then echo "OK $id $eod"; eod=$(( eod + size ));
      else echo "ERR $id MEDIA_ERROR cannot write $name"; fi
    done < "$list"
    ;;
  dismount)
    if [ ! -d "$mounted" ]; then echo "volume $volume is not in $drive" >&2; exit 3; fi
    mv "$mounted" "$slots/$volume" || exit 3
    ;;
  *)
    echo "unknown verb $verb" >&2; exit 64
    ;;
esac
