#!/usr/bin/env bash
# The demo: lint the example pipelines. (Planning and applying them on the
# embedded PostgreSQL arrive with the runner.)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== rwc lint pipelines"
bin/rwc lint pipelines
