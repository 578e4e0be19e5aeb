#!/usr/bin/env bash
# Builds the JVM reader into python/lance_core/jars/: one jar holding these Java sources,
# compiled against the installed pyspark's own jars (so nothing is downloaded), and the
# native library (crate rust/jni). Usage: java/build.sh <python> [cargo profile, default release].
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: java/build.sh <python> [profile]}
PROFILE=${2:-release}
OUT=python/lance_core/jars
SPARK_JARS=$("$PY" -c "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")
VERSION=$(cargo pkgid -p lance-core-jni | sed 's/.*[#@]//')

cargo build --profile "$PROFILE" -p lance-core-jni
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}/$PROFILE
[ "$PROFILE" = dev ] && TARGET=${CARGO_TARGET_DIR:-target}/debug

CLASSES=${CARGO_TARGET_DIR:-target}/java-classes
rm -rf "$CLASSES"
mkdir -p "$CLASSES/lance_core/spark/native"
javac -Xlint:deprecation -encoding UTF-8 --release 17 -cp "$SPARK_JARS/*" -d "$CLASSES" java/src/lance_core/spark/*.java
cp -r java/resources/. "$CLASSES/"
printf '%s\n' "$VERSION" > "$CLASSES/lance_core/spark/native.version"
# The jar carries the native library (its only copy in the wheel), so that an executor
# that fetched the jar has it; its SHA-256 names the directory it is extracted to.
LIB="$CLASSES/lance_core/spark/native/liblance_core_jni.so"
cp "$TARGET/liblance_core_jni.so" "$LIB"
sha256sum "$LIB" | cut -d' ' -f1 > "$LIB.sha256"
jar --create --file "$OUT/lance-core-spark.jar.tmp" -C "$CLASSES" .
mv "$OUT/lance-core-spark.jar.tmp" "$OUT/lance-core-spark.jar"
rm -f "$OUT/liblance_core_jni.so"  # where earlier builds put it
echo "built $OUT/lance-core-spark.jar, carrying its native library ($VERSION)"
