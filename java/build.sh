#!/usr/bin/env bash
# Builds the JVM reader into python/lance_core/jars/: the native library (crate rust/jni)
# and the jar (these Java sources, compiled against the installed pyspark's own jars, so
# nothing is downloaded). Usage: java/build.sh <python> [cargo profile, default release].
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: java/build.sh <python> [profile]}
PROFILE=${2:-release}
OUT=python/lance_core/jars
SPARK_JARS=$("$PY" -c "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")
VERSION=$(cargo pkgid -p lance-core-jni | sed 's/.*[#@]//')

cargo build --profile "$PROFILE" -p lance-core-jni
mkdir -p "$OUT"
TARGET=target/$PROFILE
[ "$PROFILE" = dev ] && TARGET=target/debug
cp "$TARGET/liblance_core_jni.so" "$OUT/liblance_core_jni.so.tmp"
mv "$OUT/liblance_core_jni.so.tmp" "$OUT/liblance_core_jni.so"

CLASSES=target/java-classes
rm -rf "$CLASSES"
mkdir -p "$CLASSES/lance_core/spark"
javac -Xlint:deprecation -encoding UTF-8 --release 17 -cp "$SPARK_JARS/*" -d "$CLASSES" java/src/lance_core/spark/*.java
cp -r java/resources/. "$CLASSES/"
printf '%s\n' "$VERSION" > "$CLASSES/lance_core/spark/native.version"
jar --create --file "$OUT/lance-core-spark.jar.tmp" -C "$CLASSES" .
mv "$OUT/lance-core-spark.jar.tmp" "$OUT/lance-core-spark.jar"
echo "built $OUT/lance-core-spark.jar and $OUT/liblance_core_jni.so ($VERSION)"
