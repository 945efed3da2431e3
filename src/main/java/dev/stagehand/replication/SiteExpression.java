package dev.stagehand.replication;

import java.math.BigDecimal;
import java.util.Map;

/**
 * Which sites a rule means: a small, Rucio-like expression over site names and attributes.
 *
 * <pre>
 * expr      := and (('|' | '\') and)*        union, difference (left to right)
 * and       := unary ('&amp;' unary)*             intersection (binds tighter than | and \)
 * unary     := '(' expr ')' | '*' | attribute | NAME
 * attribute := KEY op VALUE                 op: = != &lt; &lt;= &gt; &gt;=
 * NAME, KEY, VALUE := [A-Za-z0-9_.:+-]+     whitespace between tokens is ignored
 * </pre>
 *
 * A bare {@code NAME} is a site's name; {@code *} is every site. {@code key=value} matches sites whose
 * attribute equals the value as text ({@code tier=1} matches both {@code "tier": 1} and {@code "tier": "1"});
 * {@code key!=value} also matches sites without the attribute; {@code < <= > >=} compare numbers and never
 * match a site without the attribute or with a non-numeric one. Examples: {@code CERN}, {@code tier=1},
 * {@code tier=1&country!=DE}, {@code (tier=1|tier=2)\BNL}.
 */
public final class SiteExpression {

    /** What an expression is evaluated against. */
    public interface Candidate {
        String name();

        Map<String, String> attributes();
    }

    private sealed interface Node permits Any, Name, Attr, Op {}

    private record Any() implements Node {}

    private record Name(String name) implements Node {}

    private record Attr(String key, String op, String value) implements Node {}

    private record Op(char op, Node left, Node right) implements Node {}

    private final String text;
    private final Node root;

    private SiteExpression(String text, Node root) {
        this.text = text;
        this.root = root;
    }

    /** Parses {@code text}; a malformed expression throws {@link IllegalArgumentException} saying where and why. */
    public static SiteExpression parse(String text) {
        if (text == null || text.isBlank()) throw new IllegalArgumentException("empty site expression");
        if (text.length() > 1000) throw new IllegalArgumentException("site expression longer than 1000 characters");
        Parser p = new Parser(text);
        Node n = p.expr();
        p.skip();
        if (p.at < text.length())
            throw new IllegalArgumentException("unexpected '" + text.charAt(p.at) + "' at position " + p.at + " in '" + text + "'");
        return new SiteExpression(text.strip(), n);
    }

    public boolean matches(Candidate site) {
        return eval(root, site);
    }

    @Override
    public String toString() {
        return text;
    }

    private static boolean eval(Node n, Candidate s) {
        return switch (n) {
            case Any a -> true;
            case Name(String name) -> name.equals(s.name());
            case Attr(String key, String op, String value) -> attr(s.attributes().get(key), op, value);
            case Op(char op, Node l, Node r) -> switch (op) {
                case '|' -> eval(l, s) || eval(r, s);
                case '&' -> eval(l, s) && eval(r, s);
                default -> eval(l, s) && !eval(r, s);
            };
        };
    }

    private static boolean attr(String actual, String op, String value) {
        return switch (op) {
            case "=" -> value.equals(actual);
            case "!=" -> !value.equals(actual);
            default -> {
                BigDecimal a = number(actual);
                BigDecimal v = number(value);
                if (a == null || v == null) yield false;
                int c = a.compareTo(v);
                yield switch (op) {
                    case "<" -> c < 0;
                    case "<=" -> c <= 0;
                    case ">" -> c > 0;
                    default -> c >= 0;
                };
            }
        };
    }

    private static BigDecimal number(String s) {
        if (s == null) return null;
        try {
            return new BigDecimal(s.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static final class Parser {
        final String s;
        int at;

        Parser(String s) {
            this.s = s;
        }

        void skip() {
            while (at < s.length() && Character.isWhitespace(s.charAt(at))) at++;
        }

        boolean eat(char c) {
            skip();
            if (at < s.length() && s.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        Node expr() {
            Node n = and();
            while (true) {
                if (eat('|')) n = new Op('|', n, and());
                else if (eat('\\')) n = new Op('\\', n, and());
                else return n;
            }
        }

        Node and() {
            Node n = unary();
            while (eat('&')) n = new Op('&', n, unary());
            return n;
        }

        Node unary() {
            if (eat('(')) {
                Node n = expr();
                if (!eat(')')) throw error("expected ')'");
                return n;
            }
            if (eat('*')) return new Any();
            String word = word("a site name or attribute");
            skip();
            String op = null;
            for (String o : new String[] {"!=", "<=", ">=", "=", "<", ">"}) {
                if (s.startsWith(o, at)) {
                    op = o;
                    break;
                }
            }
            if (op == null) return new Name(word);
            at += op.length();
            String value = word("a value after '" + word + op + "'");
            if (!op.equals("=") && !op.equals("!=") && number(value) == null)
                throw new IllegalArgumentException("'" + word + op + value + "' compares with a non-number in '" + s + "'");
            return new Attr(word, op, value);
        }

        String word(String what) {
            skip();
            int start = at;
            while (at < s.length() && wordChar(s.charAt(at))) at++;
            if (start == at) throw error("expected " + what);
            return s.substring(start, at);
        }

        static boolean wordChar(char c) {
            return c < 128 && (Character.isLetterOrDigit(c) || c == '_' || c == '.' || c == ':' || c == '+' || c == '-');
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException(what + (at < s.length() ? " at position " + at + " ('" + s.charAt(at) + "')"
                    : " at the end") + " in '" + s + "'");
        }
    }
}
