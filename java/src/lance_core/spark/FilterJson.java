package lance_core.spark;

import java.math.BigDecimal;
import java.math.BigInteger;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.sources.*;

/** Spark's filters as the JSON the native library translates into predicates (see
 *  {@code lance_core::spark::filters}); which filters are taken is decided there. */
final class FilterJson {
  private FilterJson() {}

  private static final java.time.format.DateTimeFormatter WALL_CLOCK =
      java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSSSSS");

  static ObjectNode of(Filter f) {
    ObjectNode out = TableRequest.JSON.createObjectNode();
    out.put("op", f.getClass().getSimpleName());
    if (f instanceof Not) {
      out.set("child", of(((Not) f).child()));
    } else if (f instanceof And) {
      out.set("left", of(((And) f).left()));
      out.set("right", of(((And) f).right()));
    } else if (f instanceof Or) {
      out.set("left", of(((Or) f).left()));
      out.set("right", of(((Or) f).right()));
    } else if (f instanceof EqualTo) {
      column(out, f, ((EqualTo) f).attribute()).set("value", value(((EqualTo) f).value()));
    } else if (f instanceof EqualNullSafe) {
      column(out, f, ((EqualNullSafe) f).attribute()).set("value", value(((EqualNullSafe) f).value()));
    } else if (f instanceof GreaterThan) {
      column(out, f, ((GreaterThan) f).attribute()).set("value", value(((GreaterThan) f).value()));
    } else if (f instanceof GreaterThanOrEqual) {
      column(out, f, ((GreaterThanOrEqual) f).attribute()).set("value", value(((GreaterThanOrEqual) f).value()));
    } else if (f instanceof LessThan) {
      column(out, f, ((LessThan) f).attribute()).set("value", value(((LessThan) f).value()));
    } else if (f instanceof LessThanOrEqual) {
      column(out, f, ((LessThanOrEqual) f).attribute()).set("value", value(((LessThanOrEqual) f).value()));
    } else if (f instanceof In) {
      ArrayNode values = column(out, f, ((In) f).attribute()).putArray("values");
      for (Object v : ((In) f).values()) {
        values.add(value(v));
      }
    } else if (f instanceof IsNull) {
      column(out, f, ((IsNull) f).attribute());
    } else if (f instanceof IsNotNull) {
      column(out, f, ((IsNotNull) f).attribute());
    } else if (f instanceof StringStartsWith) {
      column(out, f, ((StringStartsWith) f).attribute()).set("value", value(((StringStartsWith) f).value()));
    } else if (f instanceof StringEndsWith) {
      column(out, f, ((StringEndsWith) f).attribute()).set("value", value(((StringEndsWith) f).value()));
    } else if (f instanceof StringContains) {
      column(out, f, ((StringContains) f).attribute()).set("value", value(((StringContains) f).value()));
    }
    return out;
  }

  /** The column's name parts (Spark quotes a dotted top-level name with backticks). */
  private static ObjectNode column(ObjectNode out, Filter f, String attribute) {
    ArrayNode parts = out.putArray("column");
    for (String p : f.toV2Column(attribute).fieldNames()) {
      parts.add(p);
    }
    return out;
  }

  private static ObjectNode value(Object v) {
    ObjectNode out = TableRequest.JSON.createObjectNode();
    if (v == null) {
      return null;
    } else if (v instanceof Boolean) {
      out.put("bool", (Boolean) v);
    } else if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long
        || v instanceof BigInteger) {
      out.put("int", v.toString());
    } else if (v instanceof Float || v instanceof Double) {
      out.put("float", Double.toString(((Number) v).doubleValue()));
    } else if (v instanceof BigDecimal) {
      out.put("decimal", ((BigDecimal) v).toPlainString());
    } else if (v instanceof String) {
      out.put("string", (String) v);
    } else if (v instanceof java.sql.Date || v instanceof java.time.LocalDate) {
      out.put("date", v.toString());
    } else if (v instanceof java.time.LocalDateTime) {
      out.put("timestamp_ntz", WALL_CLOCK.format((java.time.LocalDateTime) v));
    } else {
      out.put("other", v.getClass().getName());
    }
    return out;
  }
}
