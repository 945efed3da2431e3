package dev.stagehand.platform;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.context.annotation.ClassPathScanningCandidateComponentProvider;
import org.springframework.core.type.filter.AnnotationTypeFilter;
import org.springframework.util.ClassUtils;

/**
 * Every {@code stagehand.*} setting the service binds, read off its {@code @ConfigurationProperties} records: Spring
 * ignores a key no record binds, so a misspelt one (aging-limt) silently left the default in force. Names are
 * compared the way Spring binds them (aging-limit, agingLimit and AGING_LIMIT are one key).
 */
public final class SettingNames {

    /** Read by the code directly, not bound (development and test switches given as system properties). */
    private static final Set<String> DIRECT = Set.of("stagehand.db.keep-local-running", "stagehand.gridftp.server");

    /** Prefix -> record, longest prefix first (stagehand.cache.health is its own record beside stagehand.cache). */
    private final Map<ConfigurationPropertyName, Class<?>> roots;

    private SettingNames(Map<ConfigurationPropertyName, Class<?>> roots) {
        this.roots = roots;
    }

    /** The records annotated {@code @ConfigurationProperties} under {@code dev.stagehand}, as the service scans them. */
    public static SettingNames scan() {
        var scanner = new ClassPathScanningCandidateComponentProvider(false);
        scanner.addIncludeFilter(new AnnotationTypeFilter(ConfigurationProperties.class));
        Map<ConfigurationPropertyName, Class<?>> roots =
                new TreeMap<>(Comparator.comparingInt(ConfigurationPropertyName::getNumberOfElements).reversed()
                        .thenComparing(ConfigurationPropertyName::toString));
        for (BeanDefinition d : scanner.findCandidateComponents("dev.stagehand")) {
            Class<?> type = ClassUtils.resolveClassName(d.getBeanClassName(), SettingNames.class.getClassLoader());
            if (!type.isRecord()) throw new IllegalStateException(type.getName() + ": settings are bound to records only");
            ConfigurationProperties a = type.getAnnotation(ConfigurationProperties.class);
            roots.put(ConfigurationPropertyName.of(a.value().isEmpty() ? a.prefix() : a.value()), type);
        }
        return new SettingNames(roots);
    }

    /**
     * Whether {@code name} (any of Spring's forms; indexes allowed) is a setting some record binds, or part of one
     * (an entry of a list or map setting).
     */
    public boolean known(String name) {
        if (DIRECT.contains(name)) return true;
        ConfigurationPropertyName n = ConfigurationPropertyName.adapt(name, '.');
        for (var root : roots.entrySet()) {
            if (root.getKey().isAncestorOf(n)) return accepts(root.getValue(), n, root.getKey().getNumberOfElements());
        }
        // a section above the records (stagehand.api, or stagehand.db left empty in YAML)
        return roots.keySet().stream().anyMatch(root -> root.equals(n) || n.isAncestorOf(root));
    }

    /** Why {@code name} is not a setting, with the keys that are at its level; empty when it is one. */
    public Optional<String> problem(String name) {
        if (known(name)) return Optional.empty();
        ConfigurationPropertyName n = ConfigurationPropertyName.adapt(name, '.');
        // the keys beside it: under the deepest part of its name that is a record's level
        for (int depth = n.getNumberOfElements() - 1; depth > 0; depth--) {
            List<String> beside = keysUnder(n.chop(depth).toString());
            if (!beside.isEmpty()) {
                return Optional.of("unknown setting " + name + ": " + n.chop(depth) + " has " + String.join(", ", beside));
            }
        }
        return Optional.of("unknown setting " + name);
    }

    /** Every setting in its documented (kebab-case) form; a list's entries as list.field, a map as one key. */
    public List<String> documentedKeys() {
        List<String> keys = new ArrayList<>();
        roots.forEach((prefix, type) -> collect(prefix.toString(), type, keys));
        return keys.stream().sorted().toList();
    }

    /** The keys one level under {@code prefix} (a record's fields), kebab-case. */
    private List<String> keysUnder(String prefix) {
        List<String> under = new ArrayList<>();
        for (String key : documentedKeys()) {
            if (key.startsWith(prefix + ".")) {
                String rest = key.substring(prefix.length() + 1);
                String first = rest.contains(".") ? rest.substring(0, rest.indexOf('.')) : rest;
                if (!under.contains(first)) under.add(first);
            }
        }
        return under;
    }

    private static void collect(String prefix, Class<?> record, List<String> keys) {
        for (RecordComponent c : record.getRecordComponents()) {
            String key = prefix + "." + kebab(c.getName());
            Class<?> raw = rawClass(c.getGenericType());
            Type element = Collection.class.isAssignableFrom(raw) ? typeArgument(c.getGenericType(), 0) : null;
            if (settingsRecord(raw)) {
                collect(key, raw, keys);
            } else if (element != null && settingsRecord(rawClass(element))) {
                collect(key, rawClass(element), keys);
            } else {
                keys.add(key);
            }
        }
    }

    /** Whether the elements of {@code n} from {@code i} on name a setting of {@code type}. */
    private static boolean accepts(Type type, ConfigurationPropertyName n, int i) {
        if (i == n.getNumberOfElements()) return true; // the value given whole (a list as "a,b", a map, a record)
        Class<?> raw = rawClass(type);
        if (settingsRecord(raw)) {
            String element = n.getElement(i, ConfigurationPropertyName.Form.UNIFORM);
            for (RecordComponent c : raw.getRecordComponents()) {
                if (c.getName().toLowerCase(java.util.Locale.ROOT).equals(element)) return accepts(c.getGenericType(), n, i + 1);
            }
            return false;
        }
        if (Collection.class.isAssignableFrom(raw)) return n.isNumericIndex(i) && accepts(typeArgument(type, 0), n, i + 1);
        if (Map.class.isAssignableFrom(raw)) return accepts(typeArgument(type, 1), n, i + 1); // any key
        return false; // below a plain value
    }

    private static boolean settingsRecord(Class<?> type) {
        return type.isRecord() && type.getPackageName().startsWith("dev.stagehand");
    }

    private static Class<?> rawClass(Type type) {
        if (type instanceof Class<?> c) return c;
        if (type instanceof ParameterizedType p) return (Class<?>) p.getRawType();
        return Object.class;
    }

    private static Type typeArgument(Type type, int index) {
        return type instanceof ParameterizedType p ? p.getActualTypeArguments()[index] : Object.class;
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
    }
}
