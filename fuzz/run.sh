#!/usr/bin/env bash
# Run fuzz targets one after another, each for SECONDS (default 60); libFuzzer's output
# goes to logs/<target>.log and one line per run to logs/ledger.tsv (target, seconds,
# executions, exit code, new crash files). Usage: fuzz/run.sh [SECONDS] [TARGET...]
# Stable Rust: `-s none` (no sanitizer, which needs nightly); see fuzz/README.md.
set -u
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(manifest file_footer miniblock fullzip constant_blob compression array20 legacy levels
             deletion_arrow deletion_roaring row_ids)
fi
mkdir -p logs corpus artifacts
cargo fuzz build -s none >logs/build.log 2>&1 || { echo "build failed: logs/build.log"; exit 1; }
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    before=$(ls "artifacts/$t" | wc -l)
    start=$(date +%s)
    nice -n 10 cargo fuzz run -s none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
        -max_len=131072 -use_value_profile=1 -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
        >"logs/$t.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
    new=$(( $(ls "artifacts/$t" | wc -l) - before ))
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$took" "${execs:-?}" "$rc" "$new" >>logs/ledger.tsv
    echo "$t: ${took}s, ${execs:-?} executions, exit $rc, $new new artifacts"
done
