package dev.stagehand.recall;

import dev.stagehand.platform.SettingNames;
import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.simulation.SimulationRun;
import dev.stagehand.recall.simulation.Workload;
import dev.stagehand.tape.TapeModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.List;
import java.util.Properties;
import java.util.function.Consumer;
import org.springframework.beans.factory.config.YamlPropertiesFactoryBean;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.core.io.FileSystemResource;

/**
 * Replays a recall workload through the real recall scheduler on the simulated library's virtual clock
 * (no Spring, no database): what {@code stagehand simulate} runs.
 */
public final class RecallSimulator {

    private RecallSimulator() {}

    /** The built-in defaults: the scheduler of config/application.yml and the reference LTO-9 model. */
    public static SimulationReport run(Path workload, int drives, int accessors, String policy,
                                       Consumer<String> progress) throws IOException {
        return run(workload, drives, accessors, Settings.defaults().withPolicy(policy), progress);
    }

    public static SimulationReport run(Path workload, int drives, int accessors, Settings settings,
                                       Consumer<String> progress) throws IOException {
        Workload w = Workload.read(workload);
        if (progress != null) {
            progress.accept(String.format(Locale.ROOT, "workload %s: %d requests, %d distinct files; %d drives, %d accessors, policy %s",
                    workload.getFileName(), w.requests().size(), w.files().size(), drives, accessors,
                    settings.scheduler().policy().name().toLowerCase(Locale.ROOT).replace('_', '-')));
        }
        return new SimulationRun(w, drives, accessors, settings.scheduler(), settings.model(), progress).run();
    }

    /**
     * What a simulation runs with: the scheduler's settings ({@code stagehand.recall.*}) and the library's
     * timing model ({@code stagehand.tape.sim.model.*}), so a site can replay a workload under its own policy
     * (drive caps, shares, aging, mount policy) and drives before deploying it.
     */
    public record Settings(SchedulerConfig scheduler, TapeModel model) {

        public static Settings defaults() {
            return new Settings(SchedulerConfig.defaults(SchedulerConfig.Policy.TAPE_AWARE), TapeModel.lto9());
        }

        /**
         * Reads the service's YAML configuration (as config/application.yml documents it); keys it does not
         * set keep the service's defaults, other keys are ignored.
         */
        public static Settings load(Path yaml) throws IOException {
            if (!Files.isRegularFile(yaml)) throw new IOException("no such file");
            YamlPropertiesFactoryBean factory = new YamlPropertiesFactoryBean();
            factory.setResources(new FileSystemResource(yaml));
            Properties props;
            try {
                props = factory.getObject();
            } catch (RuntimeException e) { // a YAML syntax error
                throw new IllegalArgumentException(yaml + ": not valid YAML: " + e.getMessage(), e);
            }
            if (props == null) props = new Properties();
            // a misspelt key would leave its default in force unnoticed, as the service refuses at start-up
            SettingNames names = SettingNames.scan();
            List<String> unknown = props.stringPropertyNames().stream().filter(k -> k.startsWith("stagehand."))
                    .sorted().flatMap(k -> names.problem(k).stream()).toList();
            if (!unknown.isEmpty()) throw new IllegalArgumentException(yaml + ": " + String.join("; ", unknown));
            Binder binder = new Binder(new MapConfigurationPropertySource(props));
            try {
                RecallProperties recall = binder.bindOrCreate("stagehand.recall", RecallProperties.class);
                TapeModel model = binder.bindOrCreate("stagehand.tape.sim.model", TapeModel.class);
                return new Settings(recall.schedulerConfig(), model);
            } catch (BindException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                throw new IllegalArgumentException(yaml + ": " + e.getMessage() + " (" + cause.getMessage() + ")", e);
            } catch (IllegalArgumentException e) { // a value that binds but is not allowed (policy, batch sizes)
                throw new IllegalArgumentException(yaml + ": " + e.getMessage(), e);
            }
        }

        /** These settings with {@code policy} instead of theirs ({@code null}: keep theirs). */
        public Settings withPolicy(String policy) {
            return policy == null ? this : new Settings(scheduler.withPolicy(SchedulerConfig.Policy.parse(policy)), model);
        }
    }

}
