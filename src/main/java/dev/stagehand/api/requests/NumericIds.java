package dev.stagehand.api.requests;

import java.beans.PropertyEditorSupport;
import java.util.function.Function;
import org.springframework.web.bind.WebDataBinder;

/**
 * Ids that are numbers in a controller's paths (a replication rule, an archived file, a cache directory), for its
 * {@code @InitBinder} methods. The handlers take a {@code long} or {@code int}, so the OpenAPI document types the id as
 * an integer, and an id that does not parse (abc, 1.5, beyond the type) throws the controller's own not-found: 404 as
 * an unknown id, as the API answers every id (the WLCG Tape REST API and dCache answer any id they did not give out
 * so). Spring's conversion answered 400, and read 0x10 and " 1 0" as numbers, other names of ids 16 and 10.
 */
public final class NumericIds {

    private NumericIds() {}

    /** Parses the {@code type} ({@code long.class} or {@code int.class}) arguments {@code binder} binds, decimal only. */
    public static void register(WebDataBinder binder, Class<?> type, Function<String, RuntimeException> unknown) {
        binder.registerCustomEditor(type, new PropertyEditorSupport() {
            @Override
            public void setAsText(String text) {
                try {
                    setValue(type == int.class ? Integer.parseInt(text) : Long.parseLong(text));
                } catch (NumberFormatException e) {
                    // not an IllegalArgumentException: Spring passes it on as it is, to the controller's advice
                    throw unknown.apply(text);
                }
            }
        });
    }
}
