package lance_core.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The statements the SQL extension adds, with lance-spark's syntax, and the {@code CALL} of
 * the catalog's procedure each becomes ({@link LanceProcedures}), which Spark's own parser
 * then parses:
 *
 * <pre>
 *   OPTIMIZE t [WITH (key = value, ...)]
 *   VACUUM t [WITH (key = value, ...)]
 *   ALTER TABLE t CREATE TAG [IF NOT EXISTS] name [AS OF VERSION n | AS OF BRANCH b [VERSION n] | AS OF TAG x]
 *   ALTER TABLE t DROP TAG [IF EXISTS] name
 *   ALTER TABLE t CREATE BRANCH [IF NOT EXISTS] name [AS OF ...], as a tag
 *   ALTER TABLE t DROP BRANCH [IF EXISTS] name
 *   ALTER TABLE t CREATE INDEX name USING method (column, ...) [WITH (key = value, ...)]
 *   ALTER TABLE t DROP INDEX name
 *   SHOW TAGS|TAG FROM|IN t
 *   SHOW BRANCHES|BRANCH FROM|IN t
 *   SHOW INDEXES|INDEX FROM|IN t
 * </pre>
 *
 * Any other text is not ours ({@link #rewrite} answers null) and goes to Spark unchanged;
 * text that starts as one of these and then goes wrong is an error that says what was
 * expected, rather than Spark's complaint about the first word.
 */
final class LanceStatements {
  private LanceStatements() {}

  /** Where a table identifier's catalog is: its first part when that names a catalog,
   *  else the current catalog (and a one-part name is in the current namespace). */
  interface Catalogs {
    boolean isCatalog(String name);

    String currentCatalog();

    String[] currentNamespace();
  }

  /** The CALL that {@code sql} means, or null when it is not one of these statements. */
  static String rewrite(String sql, Catalogs catalogs) {
    List<Token> tokens = tokenize(sql);
    if (tokens == null || tokens.isEmpty()) {
      return null;
    }
    Cursor c = new Cursor(tokens, sql);
    if (c.word("OPTIMIZE") || c.word("VACUUM")) {
      String op = c.previous().text.toLowerCase(Locale.ROOT);
      Target t = c.table(catalogs);
      String options = c.word("WITH") ? c.options() : "map()";
      c.end();
      return t.call(op, "options => " + options);
    }
    if (c.peekWord(0, "SHOW") && (c.peekWord(1, "TAGS") || c.peekWord(1, "TAG") || c.peekWord(1, "INDEXES")
        || c.peekWord(1, "INDEX") || c.peekWord(1, "BRANCHES") || c.peekWord(1, "BRANCH"))) {
      c.next();
      String kind = c.next().text.toUpperCase(Locale.ROOT);
      String what = kind.startsWith("TAG") ? "show_tags" : kind.startsWith("BRANCH") ? "show_branches" : "show_indexes";
      if (!c.word("FROM") && !c.word("IN")) {
        throw c.expected("FROM or IN");
      }
      Target t = c.table(catalogs);
      c.end();
      return t.call(what, null);
    }
    if (!c.peekWord(0, "ALTER") || !c.peekWord(1, "TABLE")) {
      return null;
    }
    Cursor probe = new Cursor(tokens, sql);
    probe.next();
    probe.next();
    try {
      probe.identifier();
    } catch (LanceException e) {
      return null;  // not a table name we read: Spark's to parse
    }
    boolean create = probe.peekWord(0, "CREATE");
    if (!(create || probe.peekWord(0, "DROP"))
        || !(probe.peekWord(1, "TAG") || probe.peekWord(1, "BRANCH") || probe.peekWord(1, "INDEX"))) {
      return null;  // an ALTER TABLE of Spark's own
    }
    c.next();
    c.next();
    Target t = c.table(catalogs);
    c.next();
    String what = c.next().text.toLowerCase(Locale.ROOT);  // tag, branch or index
    boolean tag = !what.equals("index");
    if (tag && create) {
      boolean ifNotExists = c.word("IF") && c.require("NOT") && c.require("EXISTS");
      String name = c.name("a " + what + " name");
      StringBuilder args = new StringBuilder(what + " => " + literal(name) + ", if_not_exists => " + ifNotExists);
      if (c.word("AS")) {
        c.require("OF");
        if (c.word("VERSION")) {
          args.append(", source_version => ").append(c.number());
        } else if (c.word("BRANCH")) {
          args.append(", source_branch => ").append(literal(c.name("a branch name")));
          if (c.word("VERSION")) {
            args.append(", source_version => ").append(c.number());
          }
        } else if (c.word("TAG")) {
          args.append(", source_tag => ").append(literal(c.name("a tag name")));
        } else {
          throw c.expected("VERSION, BRANCH or TAG");
        }
      }
      c.end();
      return t.call("create_" + what, args.toString());
    }
    if (tag) {
      boolean ifExists = c.word("IF") && c.require("EXISTS");
      String name = c.name("a " + what + " name");
      c.end();
      return t.call("drop_" + what, what + " => " + literal(name) + ", if_exists => " + ifExists);
    }
    if (!create) {
      String name = c.name("an index name");
      c.end();
      return t.call("drop_index", "name => " + literal(name));
    }
    String name = c.name("an index name");
    c.require("USING");
    String method = c.name("an index method (btree, bitmap, zonemap, ...)");
    if (!c.punct("(")) {
      throw c.expected("( and the indexed columns");
    }
    StringBuilder columns = new StringBuilder("array(");
    do {
      List<String> column = c.identifier();
      columns.append(columns.length() > 6 ? ", " : "").append(literal(String.join(".", column)));
    } while (c.punct(","));
    if (!c.punct(")")) {
      throw c.expected(", or )");
    }
    String options = c.word("WITH") ? c.options() : "map()";
    c.end();
    return t.call("create_index", "name => " + literal(name) + ", method => " + literal(method)
        + ", columns => " + columns.append(")") + ", options => " + options);
  }

  /** A table the statement names: its catalog and its parts within it. */
  private static final class Target {
    final String catalog;
    final List<String> parts;

    Target(String catalog, List<String> parts) {
      this.catalog = catalog;
      this.parts = parts;
    }

    String call(String procedure, String args) {
      StringBuilder table = new StringBuilder("array(");
      for (int i = 0; i < parts.size(); i++) {
        table.append(i == 0 ? "" : ", ").append(literal(parts.get(i)));
      }
      table.append(")");
      return "CALL " + quoted(catalog) + "." + LanceProcedures.NAMESPACE + "." + procedure + "(table => " + table
          + (args == null ? "" : ", " + args) + ")";
    }
  }

  static String quoted(String identifier) {
    return "`" + identifier.replace("`", "``") + "`";
  }

  /** A Spark SQL string literal holding {@code s} (backslash escapes, Spark's default). */
  static String literal(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  // -- tokens ----------------------------------------------------------------------------

  private enum Kind { WORD, QUOTED, STRING, NUMBER, PUNCT }

  private static final class Token {
    final Kind kind;
    final String text;
    final int at;

    Token(Kind kind, String text, int at) {
      this.kind = kind;
      this.text = text;
      this.at = at;
    }
  }

  /** The statement's tokens, or null when it has text these statements never hold (it is
   *  then Spark's to parse, or to refuse). */
  private static List<Token> tokenize(String sql) {
    List<Token> out = new ArrayList<>();
    int i = 0;
    int n = sql.length();
    while (i < n) {
      char ch = sql.charAt(i);
      if (Character.isWhitespace(ch)) {
        i++;
      } else if (ch == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
        while (i < n && sql.charAt(i) != '\n') {
          i++;
        }
      } else if (Character.isLetter(ch) || ch == '_') {
        int s = i;
        while (i < n && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '_')) {
          i++;
        }
        out.add(new Token(Kind.WORD, sql.substring(s, i), s));
      } else if (Character.isDigit(ch) || (ch == '-' && i + 1 < n && Character.isDigit(sql.charAt(i + 1)))) {
        int s = i++;
        while (i < n && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '.')) {
          i++;
        }
        out.add(new Token(Kind.NUMBER, sql.substring(s, i), s));
      } else if (ch == '`') {
        StringBuilder b = new StringBuilder();
        int s = i++;
        while (true) {
          if (i >= n) {
            return null;
          }
          if (sql.charAt(i) == '`') {
            if (i + 1 < n && sql.charAt(i + 1) == '`') {
              b.append('`');
              i += 2;
              continue;
            }
            i++;
            break;
          }
          b.append(sql.charAt(i++));
        }
        out.add(new Token(Kind.QUOTED, b.toString(), s));
      } else if (ch == '\'' || ch == '"') {
        StringBuilder b = new StringBuilder();
        int s = i++;
        while (true) {
          if (i >= n) {
            return null;
          }
          char c = sql.charAt(i);
          if (c == '\\' && i + 1 < n) {
            b.append(sql.charAt(i + 1));
            i += 2;
          } else if (c == ch) {
            i++;
            break;
          } else {
            b.append(c);
            i++;
          }
        }
        out.add(new Token(Kind.STRING, b.toString(), s));
      } else if ("(),=.;".indexOf(ch) >= 0) {
        out.add(new Token(Kind.PUNCT, String.valueOf(ch), i++));
      } else {
        return null;
      }
    }
    while (!out.isEmpty() && out.get(out.size() - 1).text.equals(";") && out.get(out.size() - 1).kind == Kind.PUNCT) {
      out.remove(out.size() - 1);
    }
    return out;
  }

  private static final class Cursor {
    private final List<Token> tokens;
    private final String sql;
    private int at;

    Cursor(List<Token> tokens, String sql) {
      this.tokens = tokens;
      this.sql = sql;
    }

    boolean peekWord(int ahead, String word) {
      int i = at + ahead;
      return i < tokens.size() && tokens.get(i).kind == Kind.WORD && tokens.get(i).text.equalsIgnoreCase(word);
    }

    boolean word(String word) {
      if (peekWord(0, word)) {
        at++;
        return true;
      }
      return false;
    }

    boolean require(String word) {
      if (!word(word)) {
        throw expected(word);
      }
      return true;
    }

    boolean punct(String p) {
      if (at < tokens.size() && tokens.get(at).kind == Kind.PUNCT && tokens.get(at).text.equals(p)) {
        at++;
        return true;
      }
      return false;
    }

    Token next() {
      if (at >= tokens.size()) {
        throw expected("more");
      }
      return tokens.get(at++);
    }

    Token previous() {
      return tokens.get(at - 1);
    }

    List<String> identifier() {
      List<String> parts = new ArrayList<>();
      do {
        Token t = at < tokens.size() ? tokens.get(at) : null;
        if (t == null || (t.kind != Kind.WORD && t.kind != Kind.QUOTED)) {
          throw expected("a name");
        }
        parts.add(t.text);
        at++;
      } while (punct("."));
      return parts;
    }

    Target table(Catalogs catalogs) {
      List<String> parts = identifier();
      if (parts.size() >= 2 && catalogs.isCatalog(parts.get(0))) {
        return new Target(parts.get(0), parts.subList(1, parts.size()));
      }
      List<String> within = new ArrayList<>();
      if (parts.size() == 1) {
        within.addAll(java.util.Arrays.asList(catalogs.currentNamespace()));
      }
      within.addAll(parts);
      return new Target(catalogs.currentCatalog(), within);
    }

    /** A name: a word, a quoted identifier or a string. */
    String name(String what) {
      Token t = at < tokens.size() ? tokens.get(at) : null;
      if (t == null || t.kind == Kind.PUNCT || t.kind == Kind.NUMBER) {
        throw expected(what);
      }
      at++;
      return t.text;
    }

    long number() {
      Token t = at < tokens.size() ? tokens.get(at) : null;
      if (t == null || t.kind != Kind.NUMBER) {
        throw expected("a version number");
      }
      at++;
      try {
        return Long.parseLong(t.text);
      } catch (NumberFormatException e) {
        throw expected("a version number");
      }
    }

    /** {@code (key = value, ...)} as a SQL map of strings. */
    String options() {
      if (!punct("(")) {
        throw expected("(");
      }
      StringBuilder map = new StringBuilder("map(");
      boolean first = true;
      while (!punct(")")) {
        if (!first && !punct(",")) {
          throw expected(", or )");
        }
        String key = name("an option name");
        if (!punct("=")) {
          throw expected("=");
        }
        Token value = next();
        if (value.kind == Kind.PUNCT) {
          throw expected("the value of option " + key);
        }
        map.append(first ? "" : ", ").append(literal(key)).append(", ").append(literal(value.text));
        first = false;
      }
      return map.append(")").toString();
    }

    void end() {
      if (at < tokens.size()) {
        throw expected("the end of the statement");
      }
    }

    LanceException expected(String what) {
      String found = at < tokens.size() ? "'" + tokens.get(at).text + "'" : "the end";
      return new LanceException("lance_core: cannot parse \"" + sql.trim() + "\": expected " + what + ", found " + found);
    }
  }
}
