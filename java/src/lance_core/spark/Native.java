package lance_core.spark;

import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The JNI entry points of lance_core's native library (the crate {@code rust/jni}), which
 * ships inside this jar, so that every executor that has the jar has the library. Requests
 * and replies are JSON bytes; batches come through the Arrow C data interface. The library
 * is loaded on first use and must be the build this jar was made with.
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

  /** A catalog operation (JSON request and reply; see {@code rust/jni/src/namespace.rs});
   *  {@code schema} is the Arrow IPC stream of a table to create, or null. */
  static native byte[] namespace(byte[] request, byte[] schema);

  /** A Spark task's writer (see {@code rust/jni/src/writer.rs}): {@code schema} is the
   *  Arrow IPC stream of the schema rows are written with, or null to keep the table's. */
  static native long openWriter(byte[] request, byte[] schema);

  /** The next bytes of the task's Arrow IPC stream of rows. */
  static native void writeBatch(long writer, byte[] ipc);

  /** The task's fragments (JSON); frees the writer. */
  static native byte[] finishWriter(long writer);

  /** Removes what the task's writer wrote; frees it. */
  static native void abortWriter(long writer);

  /** The driver commits a job's fragments as one version, which it returns. */
  static native long commitWrite(byte[] request, byte[] schema);

  /** The driver removes a job's files (unless a version may refer to them). */
  static native void abortWrite(byte[] request);

  /** 1 when every filter of the request (JSON) can be deleted by exactly, else 0. */
  static native long canDeleteWhere(byte[] request);

  /** Deletes the rows the request's filters hold for: {"version", "num_deleted_rows"}. */
  static native byte[] deleteWhere(byte[] request);

  /** An ALTER TABLE change (see {@code rust/jni/src/alter.rs}); {@code schema} holds the
   *  columns added or the new types. */
  static native byte[] alterTable(byte[] request, byte[] schema);

  /** A metadata table's rows, or the output of a SQL extension statement it runs (see
   *  {@code rust/jni/src/commands.rs}), as an Arrow IPC stream. */
  static native byte[] tableCommand(byte[] request);

  /** A step of a CREATE INDEX job (see {@code index_job} in {@code rust/jni/src/commands.rs}),
   *  JSON. */
  static native byte[] indexJob(byte[] request);

  /** A {@code VECTOR_SEARCH}'s arguments by name, checked (see {@code search_arguments} in
   *  {@code rust/jni/src/commands.rs}), JSON. */
  static native byte[] searchArguments(byte[] request);

  /** Where the jar keeps the library (and its SHA-256, written by the build). */
  private static final String EMBEDDED = "native/" + System.mapLibraryName("lance_core_jni");

  /** The library's path: the system property {@code lance_core.native_library}, else the
   *  copy the jar carries, extracted (see {@link #extracted}). */
  static String libraryPath() {
    String explicit = System.getProperty("lance_core.native_library");
    if (explicit != null && !explicit.isEmpty()) {
      return explicit;
    }
    return extracted().getPath();
  }

  /**
   * The jar's library as a file: a JVM cannot load a library from inside a jar, and an
   * executor on a cluster has nothing but the jar Spark fetched for it. Written once per
   * machine under the temporary directory, in a directory named by the library's SHA-256
   * (so a file there is always this build's), first to a file of its own and then moved
   * into place, so that JVMs starting together never load a half-written file.
   */
  static File extracted() {
    String sha = resource(EMBEDDED + ".sha256").trim();
    File dir = new File(System.getProperty("java.io.tmpdir"), "lance_core-" + sha.substring(0, Math.min(16, sha.length())));
    File lib = new File(dir, System.mapLibraryName("lance_core_jni"));
    if (lib.isFile()) {
      return lib;
    }
    try (InputStream in = Native.class.getResourceAsStream(EMBEDDED)) {
      if (in == null) {
        throw new LanceException("lance_core: the jar carries no native library (" + EMBEDDED
            + "): a broken build; reinstall lance_core, or set -Dlance_core.native_library=<path>");
      }
      Files.createDirectories(dir.toPath());
      Path part = Files.createTempFile(dir.toPath(), "extracting-", ".part");
      try {
        Files.copy(in, part, StandardCopyOption.REPLACE_EXISTING);
        Files.move(part, lib.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } finally {
        Files.deleteIfExists(part);
      }
      return lib;
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: cannot write its native library to " + lib + ": " + e
          + " (set java.io.tmpdir to a writable directory, or -Dlance_core.native_library=<path>)");
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
            + "(unset -Dlance_core.native_library to use the one the jar carries)");
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
    return resource("native.version").trim();
  }

  /** A text resource of the jar, beside this class. */
  private static String resource(String name) {
    try (InputStream in = Native.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new LanceException("lance_core: the jar has no " + name + " (a broken build)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: cannot read the jar's " + name + ": " + e);
    }
  }
}
