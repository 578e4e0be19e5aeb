package lance_core.spark;

import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * The JNI entry points of lance_core's native library (the crate {@code rust/jni}), which
 * ships beside this jar in the wheel. Requests and replies are JSON bytes; batches come
 * through the Arrow C data interface. The library is loaded on first use and must be the
 * build this jar was made with.
 */
final class Native {
  private Native() {}

  static native byte[] version();

  static native byte[] describe(byte[] request);

  static native long countRows(byte[] request);

  static native long openReader(byte[] request);

  static native long nextBatch(long reader, long arrayStruct, long schemaStruct);

  static native void releaseBatch(long arrayStruct, long schemaStruct);

  static native void closeReader(long reader);

  /** The library's path: the system property {@code lance_core.native_library}, else the
   *  file beside this jar. */
  static String libraryPath() {
    String explicit = System.getProperty("lance_core.native_library");
    if (explicit != null && !explicit.isEmpty()) {
      return explicit;
    }
    try {
      File jar = new File(Native.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return new File(jar.getParentFile(), System.mapLibraryName("lance_core_jni")).getPath();
    } catch (Exception e) {
      throw new LanceException("lance_core: cannot tell where its jar is, to find the native library: " + e);
    }
  }

  private static volatile boolean loaded;

  /** Load the library once, and check it is the build this jar expects. */
  static void load() {
    if (loaded) {
      return;
    }
    synchronized (Native.class) {
      if (loaded) {
        return;
      }
      String path = libraryPath();
      if (!new File(path).isFile()) {
        throw new LanceException("lance_core: its native library " + path + " is missing "
            + "(reinstall lance_core, or set -Dlance_core.native_library=<path>)");
      }
      try {
        System.load(path);
      } catch (UnsatisfiedLinkError e) {
        throw new LanceException("lance_core: cannot load its native library " + path + ": " + e.getMessage(), e);
      }
      String expected = expectedVersion();
      String actual;
      try {
        actual = new String(version(), StandardCharsets.UTF_8);
      } catch (UnsatisfiedLinkError e) {
        throw new LanceException("lance_core: " + path + " is not lance_core's native library: " + e.getMessage(), e);
      }
      if (!actual.equals(expected)) {
        throw new LanceException("lance_core: the native library " + path + " is version '" + actual
            + "' but this jar needs '" + expected + "' (the jar and the library come from different builds)");
      }
      loaded = true;
    }
  }

  /** The version of the native library this jar was built with (written by the build). */
  static String expectedVersion() {
    try (InputStream in = Native.class.getResourceAsStream("native.version")) {
      if (in == null) {
        throw new LanceException("lance_core: the jar has no native.version (a broken build)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: cannot read the jar's native.version: " + e);
    }
  }
}
