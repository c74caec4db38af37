#!/bin/sh
# Cross-check of cmd/mcpbench with an independent MCP load generator (not
# part of this repository: any that takes the flags used below and writes
# JSON lines, with a summarizer that groups them): the three request
# scenarios that matter most, three repetitions, servers alternating,
# summarised as median (min-max).
#
# Usage, from the repository root, after
# `cd internal/bench && go run ./cmd/mcpbench -check-only`
# (which builds bin/flowyprompt, bin/peer-mcpgo and bin/peer-gosdk):
#
#   LOADGEN=/path/to/generator SUMMARIZE=/path/to/summarize sh internal/bench/crosscheck.sh
set -eu

LOADGEN=${LOADGEN:-/tmp/loadgen}
SUMMARIZE=${SUMMARIZE:-/tmp/summarize}
OUT=${OUT:-/tmp/crosscheck.jsonl}
REPS=${REPS:-3}
T=internal/bench/templates
P='{"name":"Bench_API_00","arguments":{"topic":"rate limits","audience":"platform engineers","tone":"direct"}}'

# Each HTTP run gets a fresh loopback port from PORT on, so a server still
# shutting down never holds the next one's port.
port=${PORT:-18400}

rm -f "$OUT"
rep=1
while [ "$rep" -le "$REPS" ]; do
  for srv in flowyprompt mcp-go go-sdk; do
    case $srv in
      flowyprompt) stdio="bin/flowyprompt serve --templates $T --log-level error" ;;
      mcp-go) stdio="bin/peer-mcpgo -templates $T" ;;
      go-sdk) stdio="bin/peer-gosdk -templates $T" ;;
    esac
    "$LOADGEN" -transport stdio -cmd "$stdio" -method prompts/get -params "$P" \
      -n 100000 -inflight 32 -warmup 5000 -expect 'platform engineers' -quiet \
      -label "$srv" -meta scenario=stdio-get-32 -meta rep=$rep -json "$OUT" -append >/dev/null
    for tr in sse http; do
      port=$((port + 1))
      case $srv in
        flowyprompt) cmd="bin/flowyprompt serve --transport http --addr 127.0.0.1:$port --templates $T --log-level error" ;;
        mcp-go) cmd="bin/peer-mcpgo -transport $tr -addr 127.0.0.1:$port -templates $T" ;;
        go-sdk) cmd="bin/peer-gosdk -transport $tr -addr 127.0.0.1:$port -templates $T" ;;
      esac
      path=/sse
      [ "$tr" = http ] && path=/mcp
      "$LOADGEN" -transport "$tr" -cmd "$cmd" -url "http://127.0.0.1:$port$path" -method prompts/get -params "$P" \
        -c 50 -r 600 -warmup 20 -expect 'platform engineers' -quiet \
        -label "$srv" -meta scenario=$tr-get-50 -meta rep=$rep -json "$OUT" -append >/dev/null
    done
  done
  rep=$((rep + 1))
done
"$SUMMARIZE" -where mode=rpc -group scenario,label -metrics rps,p50_us,p99_us,srv_cpu_us_per_req,cli_cpu_us_per_req,srv_hwm_kb "$OUT"
