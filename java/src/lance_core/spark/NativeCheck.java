package lance_core.spark;

/**
 * Loads the native library the way a query would and prints its path and version, or the
 * reason it cannot be used: {@code java -cp "<pyspark>/jars/*:lance-core-spark.jar"
 * lance_core.spark.NativeCheck}.
 */
public final class NativeCheck {
  private NativeCheck() {}

  public static void main(String[] args) {
    try {
      Native.load();
      System.out.println("ok " + Native.libraryPath() + " " + Native.expectedVersion());
    } catch (LanceException e) {
      System.out.println("error " + e.getMessage());
      System.exit(1);
    }
  }
}
