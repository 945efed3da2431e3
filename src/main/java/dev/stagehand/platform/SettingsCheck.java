package dev.stagehand.platform;

import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.stereotype.Component;

/**
 * Refuses to start when a {@code stagehand.*} setting is one no part of the service reads (see {@link SettingNames}),
 * naming the key, where it was given and the keys beside it. Runs before any bean is made: nothing has started
 * (no database, no drives) when it refuses. Environment variables are left out: STAGEHAND_* also names variables
 * that are not settings (STAGEHAND_ADMIN_TOKEN, STAGEHAND_SIM_TRACE).
 */
@Component
class SettingsCheck implements BeanFactoryPostProcessor, EnvironmentAware {

    private Environment environment;

    @Override
    public void setEnvironment(Environment environment) {
        this.environment = environment;
    }

    @Override
    public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
        List<String> problems = problems(environment, SettingNames.scan());
        if (!problems.isEmpty()) {
            throw new UnknownSettings(problems);
        }
    }

    /** Settings no part of the service reads. */
    static final class UnknownSettings extends IllegalStateException {
        final List<String> problems;

        UnknownSettings(List<String> problems) {
            super("the configuration names settings Stagehand does not have:\n  " + String.join("\n  ", problems));
            this.problems = problems;
        }
    }

    /** Spring Boot's start-up failure report for {@link UnknownSettings}: what is wrong and what to do, no stack trace. */
    static final class Analyzer extends AbstractFailureAnalyzer<UnknownSettings> {
        @Override
        protected FailureAnalysis analyze(Throwable root, UnknownSettings cause) {
            return new FailureAnalysis(cause.getMessage(), "Correct or remove these settings; config/application.yml documents every "
                    + "stagehand.* setting.", cause);
        }
    }

    static List<String> problems(Environment environment, SettingNames names) {
        List<String> problems = new ArrayList<>();
        ConfigurationPropertyName stagehand = ConfigurationPropertyName.of("stagehand");
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            if (!(source instanceof IterableConfigurationPropertySource iterable)) continue;
            if (source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource) continue;
            String origin = source.getUnderlyingSource() instanceof PropertySource<?> p ? p.getName() : String.valueOf(source);
            iterable.stream().filter(stagehand::isAncestorOf)
                    .forEach(name -> names.problem(name.toString()).ifPresent(p -> problems.add(p + " (in " + origin + ")")));
        }
        return problems;
    }
}
