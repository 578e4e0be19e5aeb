package lance_core.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** A task's share of a scan: physical rows {@code start..end} of one fragment, or the
 *  answer to {@code count(*)}. Carries its whole request, so an executor needs nothing
 *  else. */
final class LancePartition implements InputPartition {
  private static final long serialVersionUID = 1L;

  /** The native request (JSON). */
  final String request;
  final boolean count;
  /** The count when planning knew it, else -1 (a task counts). */
  final long knownCount;

  private LancePartition(String request, boolean count, long knownCount) {
    this.request = request;
    this.count = count;
    this.knownCount = knownCount;
  }

  static LancePartition rows(TableRequest scan, long fragment, long start, long end) {
    TableRequest r = scan.copy();
    r.body.put("fragment_id", fragment);
    r.body.put("start", start);
    r.body.put("end", end);
    return new LancePartition(r.body.toString(), false, -1);
  }

  /** The whole of a read that is one task's (a {@code VECTOR_SEARCH}). */
  static LancePartition whole(TableRequest read) {
    return new LancePartition(read.body.toString(), false, -1);
  }

  static LancePartition count(TableRequest scan, long known) {
    return new LancePartition(scan.body.toString(), true, known);
  }
}
