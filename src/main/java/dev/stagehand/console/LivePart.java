package dev.stagehand.console;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Each console page has a part that htmx polls at the page's URL plus {@code /live}. One handler serves
 * both URLs with the same model: the whole page, or only its {@code live} fragment for the poll.
 */
final class LivePart {

    private LivePart() {}

    /** {@code page}, or its {@code live} fragment when the request came to the page's {@code /live} URL. */
    static String view(String page, HttpServletRequest request) {
        return request.getRequestURI().endsWith("/live") ? page + " :: live" : page;
    }
}
