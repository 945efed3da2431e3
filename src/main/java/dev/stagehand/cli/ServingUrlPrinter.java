package dev.stagehand.cli;

import java.io.PrintStream;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;

/** Prints the URL the service answers on, once the web server is listening. */
final class ServingUrlPrinter implements ApplicationListener<WebServerInitializedEvent> {
    private final PrintStream out;

    ServingUrlPrinter(PrintStream out) {
        this.out = out;
    }

    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        out.printf("Stagehand serving at http://localhost:%d/%n", event.getWebServer().getPort());
        out.flush();
    }
}
