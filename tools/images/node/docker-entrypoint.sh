#!/bin/sh
# As in the official Node image: arguments that are not a command (`-e ...`, `app.js`) go to node.
set -e
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ] || ! command -v -- "$1" >/dev/null 2>&1; then
  set -- node "$@"
fi
exec "$@"
