package dev.stagehand.api.security;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.JsonBodies;
import dev.stagehand.platform.EntryError;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * Who am I ({@code /api/v1/whoami}, any account), and the admin API ({@code /api/v1/admin/**}, admin role):
 * accounts (role, experiments) and their bearer tokens. A new token is shown once, in the creation answer.
 */
@RestController
@Tag(name = "Accounts and tokens", description = "who am I; admin: accounts, bearer tokens")
class AdminController {

    private static final long MAX_TOKEN_LIFETIME_S = 10L * 365 * 24 * 3600;

    private final ApiAccounts accounts;
    private final ApiTokens tokens;

    AdminController(ApiAccounts accounts, ApiTokens tokens) {
        this.accounts = accounts;
        this.tokens = tokens;
    }

    /** {@code jwt}: set when a WLCG token authenticated the call; its {@code scopes} null when it has no storage scopes. */
    record WhoAmI(String account, String role, Set<String> experiments, String authenticatedBy, String dn, JwtView jwt) {}

    record JwtView(String issuer, String subject, List<String> groups, List<String> scopes) {}

    record AccountView(String name, String role, Set<String> experiments, Instant createdAt, Instant updatedAt) {
        static AccountView of(ApiAccounts.Account a) {
            return new AccountView(a.name(), a.role().dbName(), new TreeSet<>(a.experiments()), a.createdAt(), a.updatedAt());
        }
    }

    record AccountBody(@Schema(description = "viewer, operator or admin") String role,
                       @Schema(description = "experiments whose requests the account sees; [\"*\"]: all") List<String> experiments) {}

    record TokenBody(@Schema(requiredMode = Schema.RequiredMode.REQUIRED) String account, String label,
                     @Schema(description = "seconds until the token expires; absent: until revoked") Long expiresInSeconds) {}

    record NewTokenView(ApiTokens.TokenInfo token, @Schema(description = "the bearer token; shown only here") String secret) {}

    @GetMapping(path = "/api/v1/whoami", produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "The calling account, its role and experiments, and how it authenticated")
    WhoAmI whoami() {
        ApiUser u = ApiUser.current();
        ApiUser.Jwt j = u.jwt();
        return new WhoAmI(u.account(), u.role().dbName(), new TreeSet<>(u.experiments()), u.method(), u.dn(), j == null ? null
                : new JwtView(j.issuer(), j.subject(), j.groups(), j.scopes() == null ? null : j.scopes().list()));
    }

    @GetMapping(path = "/api/v1/admin/accounts", produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Accounts (admin)")
    List<AccountView> accounts() {
        return accounts.list().stream().map(AccountView::of).toList();
    }

    @PutMapping(path = "/api/v1/admin/accounts/{name}", consumes = MediaType.ALL_VALUE, produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Create or replace an account (admin)",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = AccountBody.class))))
    AccountView putAccount(@PathVariable("name") String name, HttpServletRequest http) throws IOException {
        JsonNode body = JsonBodies.parse(JsonBodies.read(http));
        List<EntryError> errors = new ArrayList<>();
        JsonBodies.unknownFields(body, Set.of("role", "experiments"), errors);
        JsonNode role = body.get("role");
        ApiRole r = null;
        if (role == null || !role.isString()) errors.add(EntryError.field("role", "required: viewer, operator or admin"));
        else {
            try {
                r = ApiRole.parse(role.stringValue());
            } catch (IllegalArgumentException e) {
                errors.add(EntryError.field("role", e.getMessage()));
            }
        }
        List<String> exps = new ArrayList<>();
        JsonNode e = body.get("experiments");
        if (e == null || !e.isArray()) errors.add(EntryError.field("experiments", "required: a list of experiment names ([\"*\"]: all)"));
        else e.forEach(x -> exps.add(x.isString() ? x.stringValue() : null));
        if (errors.isEmpty()) {
            String why = ApiAccounts.problem(name, exps);
            if (why != null) errors.add(EntryError.field(why.startsWith("account") ? "name" : "experiments", why));
        }
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, JsonBodies.describe(errors), errors);
        try {
            return AccountView.of(accounts.put(name, r, exps));
        } catch (IllegalArgumentException ex) {
            throw BadInput.field("role", ex.getMessage());
        }
    }

    @DeleteMapping(path = "/api/v1/admin/accounts/{name}")
    @Operation(summary = "Delete an account and its tokens (admin)")
    ResponseEntity<Void> deleteAccount(@PathVariable("name") String name) {
        try {
            if (!accounts.delete(name)) throw BadInput.notFound("account", name);
        } catch (IllegalArgumentException e) {
            throw BadInput.field("name", e.getMessage());
        }
        return ResponseEntity.noContent().build();
    }

    @GetMapping(path = "/api/v1/admin/tokens", produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Bearer tokens, newest first, without their secrets (admin)")
    List<ApiTokens.TokenInfo> tokens(@RequestParam(name = "account", required = false) String account) {
        return tokens.list(BadInput.noNul("account", account)); // PostgreSQL refused a NUL: a 500
    }

    @PostMapping(path = "/api/v1/admin/tokens", consumes = MediaType.ALL_VALUE, produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Create a bearer token for an account (admin); the answer is the only place the token appears",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = TokenBody.class))))
    ResponseEntity<NewTokenView> createToken(HttpServletRequest http) throws IOException {
        JsonNode body = JsonBodies.parse(JsonBodies.read(http));
        List<EntryError> errors = new ArrayList<>();
        JsonBodies.unknownFields(body, Set.of("account", "label", "expiresInSeconds"), errors);
        JsonNode account = body.get("account");
        if (account == null || !account.isString()) errors.add(EntryError.field("account", "required: the account's name"));
        // a NUL cannot reach PostgreSQL (it refused the query or the insert: a 500); no account name holds one
        else if (account.stringValue().indexOf('\0') >= 0) errors.add(EntryError.field("account", "contains a NUL character"));
        else if (accounts.find(account.stringValue()).isEmpty()) errors.add(EntryError.field("account", "no account '" + account.stringValue() + "'"));
        JsonNode label = body.get("label");
        if (label != null && !label.isNull() && (!label.isString() || label.stringValue().length() > BadInput.MAX_TEXT))
            errors.add(EntryError.field("label", "a text of at most " + BadInput.MAX_TEXT + " characters"));
        else if (label != null && label.isString() && label.stringValue().indexOf('\0') >= 0)
            errors.add(EntryError.field("label", "contains a NUL character"));
        JsonNode exp = body.get("expiresInSeconds");
        Instant expires = null;
        if (exp != null && !exp.isNull()) {
            // beyond a long, longValue() throws (it was a 500)
            if (!exp.isIntegralNumber() || !exp.canConvertToLong() || exp.longValue() < 1 || exp.longValue() > MAX_TOKEN_LIFETIME_S)
                errors.add(EntryError.field("expiresInSeconds", "an integer from 1 to " + MAX_TOKEN_LIFETIME_S));
            else expires = Instant.now().plusSeconds(exp.longValue());
        }
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, JsonBodies.describe(errors), errors);
        ApiTokens.NewToken t = tokens.create(account.stringValue(), label == null || label.isNull() ? null : label.stringValue(),
                expires, ApiUser.current().account());
        return ResponseEntity.created(URI.create("/api/v1/admin/tokens/" + t.info().id())).body(new NewTokenView(t.info(), t.token()));
    }

    @DeleteMapping(path = "/api/v1/admin/tokens/{id}")
    @Operation(summary = "Revoke a bearer token (admin); it stops working at once")
    ResponseEntity<Void> revoke(@PathVariable("id") String id) {
        UUID uuid;
        try {
            uuid = UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            throw BadInput.notFound("token", id);
        }
        if (!tokens.revoke(uuid)) throw BadInput.notFound("token", id);
        return ResponseEntity.noContent().build();
    }

}
