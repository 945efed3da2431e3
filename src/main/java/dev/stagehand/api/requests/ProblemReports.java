package dev.stagehand.api.requests;

import java.io.IOException;
import java.io.Writer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.catalina.Host;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.coyote.ActionCode;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.security.web.firewall.RequestRejectedHandler;
import tools.jackson.databind.json.JsonMapper;

/**
 * Errors Tomcat answers itself, before any of the application runs, as the API's problem documents. A URL whose
 * path holds an encoded NUL, slash or backslash, or a bad %-escape, is refused by Tomcat's connector (400 "Invalid
 * URI") and mapped to no context, so neither a filter nor Spring's error controller sees it: the host's error report
 * valve writes the answer, which was Tomcat's HTML page. Tomcat's documented place for this is that valve; this one
 * writes {@code application/problem+json} with the same members as every other refusal of the API. What Tomcat lets
 * through but Spring Security's firewall refuses is answered the same way.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class ProblemReports {

    /**
     * Puts {@link Valve} in the place of the host's error report valve (Spring Boot adds a plain one, and the host
     * adds its errorReportValveClass at start unless a valve of that class is there).
     */
    @Bean
    WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory> problemReportValve() {
        return factory -> factory.addContextCustomizers(context -> {
            Host host = (Host) context.getParent();
            for (org.apache.catalina.Valve v : host.getPipeline().getValves()) {
                if (v instanceof ErrorReportValve) host.getPipeline().removeValve(v);
            }
            host.getPipeline().addValve(new Valve());
            if (host instanceof StandardHost h) h.setErrorReportValveClass(Valve.class.getName());
        });
    }

    /**
     * A URL Spring Security's firewall refuses (a path parameter, an encoded %, period or control character, a
     * double slash...) is answered alike; it went to Spring Boot's error page, not in the API's shape.
     */
    @Bean
    RequestRejectedHandler requestRejectedAsProblem() {
        return (request, response, e) -> {
            response.setStatus(400);
            response.setContentType("application/problem+json");
            response.setCharacterEncoding("utf-8");
            response.getWriter().write(problem(400, "Bad Request", unreadable(e.getMessage()), true));
        };
    }

    private static String unreadable(String why) {
        return "the URL cannot be read (" + why + "): its path holds a bad %-escape, an encoded NUL, slash, backslash "
                + "or control character, or a sequence the API refuses";
    }

    /** A problem document as {@link ProblemAdvice} writes them, with one error (naming the URL when it is the fault). */
    private static String problem(int status, String title, String detail, boolean url) {
        Map<String, Object> problem = new LinkedHashMap<>();
        problem.put("type", "https://stagehand.dev/problems/" + (status == 400 ? "invalid-request" : "error"));
        problem.put("title", title);
        problem.put("status", status);
        problem.put("detail", detail);
        problem.put("errors", List.of(url ? Map.of("field", "url", "reason", detail) : Map.of("reason", detail)));
        return JsonMapper.shared().writeValueAsString(problem);
    }

    /** Tomcat's error report as a problem document; guards as Tomcat's own JsonErrorReportValve has them. */
    public static final class Valve extends ErrorReportValve {

        @Override
        protected void report(Request request, Response response, Throwable throwable) {
            int status = response.getStatus();
            // nothing for a success, nothing over an answer already written, one report per error
            if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) return;
            AtomicBoolean io = new AtomicBoolean(false);
            response.getCoyoteResponse().action(ActionCode.IS_IO_ALLOWED, io);
            if (!io.get()) return;
            HttpStatus known = HttpStatus.resolve(status);
            String title = known != null ? known.getReasonPhrase() : "Error";
            // Tomcat's message ("Invalid URI", "Invalid URI: ..."), never an exception's: it may say too much
            String message = throwable == null && response.getMessage() != null && !response.getMessage().isBlank()
                    ? response.getMessage() : title;
            // mapped to no context: the URL itself could not be read
            boolean url = status == 400 && request.getContext() == null;
            String detail = url ? unreadable(message) : message;
            try {
                response.setContentType("application/problem+json");
                response.setCharacterEncoding("utf-8");
                Writer w = response.getReporter();
                if (w != null) {
                    w.write(problem(status, title, detail, url));
                    response.finishResponse();
                }
            } catch (IOException | IllegalStateException e) {
                // the client is gone or the answer is already on its way: nothing more to say
            }
        }
    }
}
