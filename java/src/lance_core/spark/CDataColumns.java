package lance_core.spark;

import java.math.BigDecimal;
import java.math.BigInteger;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.NullType$;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.BinaryType$;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark column vectors reading Arrow arrays in place, as the Arrow C data interface hands
 * them over (no copy, no Arrow Java). The native side has already put every column into
 * one of the layouts here (see {@code lance_core::spark::types}): fixed-width values,
 * bit-packed booleans, variable-width bytes with 32- or 64-bit offsets, lists with 32- or
 * 64-bit offsets, maps, structs and nulls.
 *
 * <p>An ArrowArray struct is ten 8-byte words: length, null_count, offset, n_buffers,
 * n_children, buffers, children, dictionary, release, private_data. An ArrowSchema struct
 * starts with its format string. The vectors are valid until the batch is released.
 */
final class CDataColumns {
  private CDataColumns() {}

  static long length(long array) {
    return Platform.getLong(null, array);
  }

  static long nullCount(long array) {
    return Platform.getLong(null, array + 8);
  }

  static long offset(long array) {
    return Platform.getLong(null, array + 16);
  }

  static long buffer(long array, int i) {
    return Platform.getLong(null, Platform.getLong(null, array + 40) + 8L * i);
  }

  static long child(long array, int i) {
    return Platform.getLong(null, Platform.getLong(null, array + 48) + 8L * i);
  }

  static long schemaChild(long schema, int i) {
    return Platform.getLong(null, Platform.getLong(null, schema + 40) + 8L * i);
  }

  /** The first character of an ArrowSchema's format string. */
  static char format(long schema, int at) {
    long text = Platform.getLong(null, schema);
    return (char) Platform.getByte(null, text + at);
  }

  /** A column vector of Spark type {@code type} over the array (and its schema) at these
   *  addresses; {@code shift} rows of a parent struct's offset come first. */
  static ColumnVector of(DataType type, long array, long schema, long shift) {
    if (type instanceof StructType) {
      return new StructColumn((StructType) type, array, schema, shift);
    }
    if (type instanceof ArrayType) {
      return new ListColumn((ArrayType) type, array, schema, shift);
    }
    if (type instanceof MapType) {
      return new MapColumn((MapType) type, array, schema, shift);
    }
    if (type instanceof StringType || type == BinaryType$.MODULE$) {
      return new BytesColumn(type, array, schema, shift);
    }
    if (type == BooleanType$.MODULE$) {
      return new BooleanColumn(type, array, shift);
    }
    if (type == NullType$.MODULE$) {
      return new NullColumn(type, (int) length(array));
    }
    return new FixedWidthColumn(type, array, shift);
  }

  /** What every layout shares: the validity bitmap and the row offset. */
  abstract static class Base extends ColumnVector {
    final long validity;
    /** Index of row 0 in the array's buffers (the array's offset plus a parent's). */
    final long first;
    final int nulls;

    Base(DataType type, long array, long shift) {
      super(type);
      this.validity = Platform.getLong(null, array + 40) == 0 ? 0 : buffer(array, 0);
      this.first = offset(array) + shift;
      long counted = nullCount(array);
      if (counted < 0 && validity != 0) {
        // Not known: count the array's unset validity bits (a struct child's whole array,
        // so an upper bound for the parent's rows, which is all hasNull needs).
        counted = 0;
        long start = offset(array);
        for (long i = start; i < start + length(array); i++) {
          if ((Platform.getByte(null, validity + (i >>> 3)) & (1 << (i & 7))) == 0) {
            counted++;
          }
        }
      }
      this.nulls = validity == 0 ? 0 : (int) counted;
    }

    @Override
    public final boolean isNullAt(int row) {
      if (validity == 0) {
        return false;
      }
      long i = first + row;
      return (Platform.getByte(null, validity + (i >>> 3)) & (1 << (i & 7))) == 0;
    }

    @Override
    public boolean hasNull() {
      return nulls > 0;
    }

    @Override
    public int numNulls() {
      return nulls;
    }

    @Override
    public void close() {
      // The batch owns the memory; LanceBatchReader releases it.
    }

    private UnsupportedOperationException wrong(String what) {
      return new UnsupportedOperationException("lance_core: a " + dataType() + " column has no " + what);
    }

    @Override
    public boolean getBoolean(int row) {
      throw wrong("boolean values");
    }

    @Override
    public byte getByte(int row) {
      throw wrong("byte values");
    }

    @Override
    public short getShort(int row) {
      throw wrong("short values");
    }

    @Override
    public int getInt(int row) {
      throw wrong("int values");
    }

    @Override
    public long getLong(int row) {
      throw wrong("long values");
    }

    @Override
    public float getFloat(int row) {
      throw wrong("float values");
    }

    @Override
    public double getDouble(int row) {
      throw wrong("double values");
    }

    @Override
    public ColumnarArray getArray(int row) {
      throw wrong("arrays");
    }

    @Override
    public ColumnarMap getMap(int row) {
      throw wrong("maps");
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      throw wrong("decimals");
    }

    @Override
    public UTF8String getUTF8String(int row) {
      throw wrong("strings");
    }

    @Override
    public byte[] getBinary(int row) {
      throw wrong("binary values");
    }

    @Override
    public ColumnVector getChild(int ordinal) {
      throw wrong("children");
    }
  }

  /** Values of 1, 2, 4, 8 or 16 bytes (decimals: 128-bit little-endian integers). */
  static final class FixedWidthColumn extends Base {
    private final long data;

    FixedWidthColumn(DataType type, long array, long shift) {
      super(type, array, shift);
      this.data = buffer(array, 1);
    }

    @Override
    public byte getByte(int row) {
      return Platform.getByte(null, data + first + row);
    }

    @Override
    public short getShort(int row) {
      return Platform.getShort(null, data + 2 * (first + row));
    }

    @Override
    public int getInt(int row) {
      return Platform.getInt(null, data + 4 * (first + row));
    }

    @Override
    public long getLong(int row) {
      return Platform.getLong(null, data + 8 * (first + row));
    }

    @Override
    public float getFloat(int row) {
      return Platform.getFloat(null, data + 4 * (first + row));
    }

    @Override
    public double getDouble(int row) {
      return Platform.getDouble(null, data + 8 * (first + row));
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      if (isNullAt(row)) {
        return null;
      }
      long at = data + 16 * (first + row);
      long low = Platform.getLong(null, at);
      long high = Platform.getLong(null, at + 8);
      if (precision <= Decimal.MAX_LONG_DIGITS() && high == (low >> 63)) {
        return Decimal.createUnsafe(low, precision, scale);
      }
      byte[] big = new byte[16];
      for (int i = 0; i < 8; i++) {
        big[15 - i] = (byte) (low >>> (8 * i));
        big[7 - i] = (byte) (high >>> (8 * i));
      }
      return Decimal.apply(new BigDecimal(new BigInteger(big), scale), precision, scale);
    }
  }

  static final class BooleanColumn extends Base {
    private final long data;

    BooleanColumn(DataType type, long array, long shift) {
      super(type, array, shift);
      this.data = buffer(array, 1);
    }

    @Override
    public boolean getBoolean(int row) {
      long i = first + row;
      return (Platform.getByte(null, data + (i >>> 3)) & (1 << (i & 7))) != 0;
    }
  }

  /** Strings and binary values: offsets (32- or 64-bit) into a data buffer. */
  static final class BytesColumn extends Base {
    private final long offsets;
    private final long data;
    private final boolean wide;

    BytesColumn(DataType type, long array, long schema, long shift) {
      super(type, array, shift);
      this.offsets = buffer(array, 1);
      this.data = buffer(array, 2);
      this.wide = Character.isUpperCase(format(schema, 0));
    }

    private long start(int row) {
      long i = first + row;
      return wide ? Platform.getLong(null, offsets + 8 * i) : Platform.getInt(null, offsets + 4 * i);
    }

    private long end(int row) {
      long i = first + row + 1;
      return wide ? Platform.getLong(null, offsets + 8 * i) : Platform.getInt(null, offsets + 4 * i);
    }

    @Override
    public UTF8String getUTF8String(int row) {
      if (isNullAt(row)) {
        return null;
      }
      long s = start(row);
      return UTF8String.fromAddress(null, data + s, (int) (end(row) - s));
    }

    @Override
    public byte[] getBinary(int row) {
      if (isNullAt(row)) {
        return null;
      }
      long s = start(row);
      byte[] out = new byte[(int) (end(row) - s)];
      Platform.copyMemory(null, data + s, out, Platform.BYTE_ARRAY_OFFSET, out.length);
      return out;
    }
  }

  /** Lists: offsets (32- or 64-bit) into one child column. */
  static final class ListColumn extends Base {
    private final long offsets;
    private final boolean wide;
    private final ColumnVector items;

    ListColumn(ArrayType type, long array, long schema, long shift) {
      super(type, array, shift);
      this.offsets = buffer(array, 1);
      this.wide = format(schema, 1) == 'L';
      this.items = of(type.elementType(), child(array, 0), schemaChild(schema, 0), 0);
    }

    private long at(long i) {
      return wide ? Platform.getLong(null, offsets + 8 * i) : Platform.getInt(null, offsets + 4 * i);
    }

    @Override
    public ColumnarArray getArray(int row) {
      if (isNullAt(row)) {
        return null;
      }
      long s = at(first + row);
      return new ColumnarArray(items, (int) s, (int) (at(first + row + 1) - s));
    }
  }

  /** Maps: 32-bit offsets into a struct child of keys and values. */
  static final class MapColumn extends Base {
    private final long offsets;
    private final ColumnVector keys;
    private final ColumnVector values;

    MapColumn(MapType type, long array, long schema, long shift) {
      super(type, array, shift);
      this.offsets = buffer(array, 1);
      long entries = child(array, 0);
      long entriesSchema = schemaChild(schema, 0);
      long entriesShift = offset(entries);
      this.keys = of(type.keyType(), child(entries, 0), schemaChild(entriesSchema, 0), entriesShift);
      this.values = of(type.valueType(), child(entries, 1), schemaChild(entriesSchema, 1), entriesShift);
    }

    @Override
    public ColumnarMap getMap(int row) {
      if (isNullAt(row)) {
        return null;
      }
      long i = first + row;
      int s = Platform.getInt(null, offsets + 4 * i);
      return new ColumnarMap(keys, values, s, Platform.getInt(null, offsets + 4 * (i + 1)) - s);
    }
  }

  static final class StructColumn extends Base {
    private final ColumnVector[] children;

    StructColumn(StructType type, long array, long schema, long shift) {
      super(type, array, shift);
      this.children = new ColumnVector[type.fields().length];
      for (int i = 0; i < children.length; i++) {
        children[i] = of(type.fields()[i].dataType(), child(array, i), schemaChild(schema, i), first);
      }
    }

    @Override
    public ColumnVector getChild(int ordinal) {
      return children[ordinal];
    }
  }

  static final class NullColumn extends ColumnVector {
    private final int rows;

    NullColumn(DataType type, int rows) {
      super(type);
      this.rows = rows;
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
      return rows > 0;
    }

    @Override
    public int numNulls() {
      return rows;
    }

    @Override
    public boolean isNullAt(int row) {
      return true;
    }

    @Override
    public boolean getBoolean(int row) {
      return false;
    }

    @Override
    public byte getByte(int row) {
      return 0;
    }

    @Override
    public short getShort(int row) {
      return 0;
    }

    @Override
    public int getInt(int row) {
      return 0;
    }

    @Override
    public long getLong(int row) {
      return 0;
    }

    @Override
    public float getFloat(int row) {
      return 0;
    }

    @Override
    public double getDouble(int row) {
      return 0;
    }

    @Override
    public ColumnarArray getArray(int row) {
      return null;
    }

    @Override
    public ColumnarMap getMap(int row) {
      return null;
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      return null;
    }

    @Override
    public UTF8String getUTF8String(int row) {
      return null;
    }

    @Override
    public byte[] getBinary(int row) {
      return null;
    }

    @Override
    public ColumnVector getChild(int ordinal) {
      return null;
    }
  }
}
