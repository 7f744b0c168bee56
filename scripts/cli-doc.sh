#!/usr/bin/env bash
# Writes docs/cli.md (or the file named) from the CLI's own help texts, formatted as lint wants it;
# test/docs/cliDoc.int.test.ts fails when docs/cli.md differs from what this writes.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/cli.md}"
broker() { node --import tsx src/cli/broker.ts "$@" 2>&1 | sed 's/^broker: //' || true; }
{
  cat <<'HEAD'
# CLI reference

`npm run broker -- <command>` (the `broker` bin of a production install). Beside a running `npm start`
it finds that service's ports (`.data/service.json`); elsewhere it reads the same environment as the
service ([configuration.md](configuration.md)). Commands that act for an operator take an access token
for a user with the operator role in `BROKER_OPERATOR_TOKEN`. This page is written by
`scripts/cli-doc.sh` from the commands' own help, and a test fails when they differ.

| exit code | meaning                                                                 |
| --------- | ----------------------------------------------------------------------- |
| 0         | done; every check passed                                                |
| 1         | a check failed (a broken chain, a missed gate, a provider not ok, …)    |
| 2         | the command line or the configuration is wrong; nothing was done        |
| 3         | the running service or the database refused (no operator role, …)      |

## broker help

HEAD
  echo '```text'
  broker help
  echo '```'
  for command in ledger sessions connections providers upstreams tools keys migrate; do
    printf '\n## broker %s\n\n```text\n' "$command"
    broker "$command" help
    echo '```'
  done
  # url-check takes any word as a URL: its usage is what it says when given none.
  printf '\n## broker url-check\n\n```text\n'
  broker url-check </dev/null | tail -n +3
  echo '```'
} | node_modules/.bin/prettier --stdin-filepath docs/cli.md > "$out"
