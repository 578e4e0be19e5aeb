#!/usr/bin/env bash
# Run fuzz targets one after another, each for SECONDS (default 60), and log libFuzzer's
# final stats to fuzz/logs/<target>.log. Usage: fuzz/run.sh [SECONDS] [TARGET...]
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
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    nice -n 10 cargo fuzz run -s none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
        -max_len=131072 -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
        >"logs/$t.log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
    echo "$t: exit $rc, ${execs:-?} executions, artifacts: $(ls "artifacts/$t" | wc -l)"
done
