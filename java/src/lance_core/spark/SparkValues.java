package lance_core.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/** Values the native library computed while planning (JSON, as `spark::types::spark_value`
 *  writes them) in Spark's internal form, for the rows of a local scan. */
final class SparkValues {
  /** A type such values are not given in. */
  static final Object UNSUPPORTED = new Object();

  private SparkValues() {}

  static Object internal(DataType type, JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
      return v.asLong();
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return v.asInt();
    }
    if (type instanceof ShortType) {
      return (short) v.asInt();
    }
    if (type instanceof ByteType) {
      return (byte) v.asInt();
    }
    if (type instanceof BooleanType) {
      return v.asBoolean();
    }
    if (type instanceof StringType) {
      return UTF8String.fromString(v.asText());
    }
    if (type instanceof DecimalType) {
      DecimalType d = (DecimalType) type;
      return Decimal.apply(new java.math.BigDecimal(v.asText()), d.precision(), d.scale());
    }
    return UNSUPPORTED;
  }
}
