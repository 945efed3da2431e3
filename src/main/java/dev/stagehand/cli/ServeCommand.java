package dev.stagehand.cli;

import dev.stagehand.StagehandApplication;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.springframework.boot.SpringApplication;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/** Runs the service until stopped; Spring Boot's own {@code --name=value} arguments pass straight through. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Run the Stagehand service (REST API, console, scheduler). Accepts Spring Boot arguments "
                + "such as --server.port=8080.")
final class ServeCommand implements Callable<Integer> {

    @Unmatched
    List<String> springArgs = new ArrayList<>();

    @Override
    public Integer call() {
        SpringApplication app = new SpringApplication(StagehandApplication.class);
        app.addListeners(new ServingUrlPrinter(System.out));
        try {
            app.run(springArgs.toArray(String[]::new));
        } catch (RuntimeException e) {
            return 1; // Spring Boot has reported it (the failure analysis, or the stack trace): not printed again
        }
        return 0; // the web server's non-daemon threads keep the JVM alive
    }
}
