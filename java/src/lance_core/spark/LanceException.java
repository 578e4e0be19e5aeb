package lance_core.spark;

/** A failure in lance_core's reader: a missing or corrupt file, a bad option, a native bug.
 *  Its message names the file and the cause. */
public class LanceException extends RuntimeException {
  public LanceException(String message) {
    super(message);
  }

  public LanceException(String message, Throwable cause) {
    super(message, cause);
  }
}
