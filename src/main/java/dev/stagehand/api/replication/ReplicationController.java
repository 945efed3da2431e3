package dev.stagehand.api.replication;

import dev.stagehand.api.security.ApiUser;
import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.NumericIds;
import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationRules.BottleneckLink;
import dev.stagehand.replication.ReplicationRules.Completeness;
import dev.stagehand.replication.ReplicationRules.Declared;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.ReplicationRules.Replica;
import dev.stagehand.replication.ReplicationRules.Rule;
import dev.stagehand.replication.ReplicationRejected;
import dev.stagehand.replication.ReplicationSchedules;
import dev.stagehand.replication.ReplicationSchedules.Schedule;
import dev.stagehand.replication.Sites;
import dev.stagehand.replication.Sites.Site;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * Sites, replication rules, bottleneck links, replicas, dataset completeness and rule schedules.
 * Bad input gets an RFC 9457 problem document naming the field ({@link ReplicationProblemAdvice}).
 */
@RestController
@RequestMapping(path = "/api/v1", produces = MediaType.APPLICATION_JSON_VALUE)
public class ReplicationController {

    private final Sites sites;
    private final ReplicationRules rules;
    private final ReplicationSchedules schedules;

    public ReplicationController(Sites sites, ReplicationRules rules, ReplicationSchedules schedules) {
        this.sites = sites;
        this.rules = rules;
        this.schedules = schedules;
    }

    // ---- sites

    @GetMapping("/sites")
    public List<Site> sites() {
        return sites.list();
    }

    @GetMapping("/sites/{name}")
    public Site site(@PathVariable String name) {
        return sites.get(name).orElseThrow(() -> ReplicationRejected.notFound("site", "no site " + name));
    }

    /** {@code {"attributes": {"tier": "1", "country": "DE"}, "endpoints": ["gsiftp://host:2811/data"]}}: creates or replaces. */
    @PutMapping(path = "/sites/{name}", consumes = MediaType.ALL_VALUE)
    public Site putSite(@PathVariable String name, HttpServletRequest http) throws IOException {
        Body b = Body.read(http, Set.of("attributes", "endpoints"));
        return sites.put(name, b.map("attributes"), b.strings("endpoints", false));
    }

    @DeleteMapping("/sites/{name}")
    public ResponseEntity<Void> deleteSite(@PathVariable String name) {
        if (!sites.delete(name)) throw ReplicationRejected.notFound("site", "no site " + name);
        return ResponseEntity.noContent().build();
    }

    // ---- bottleneck links

    @GetMapping("/replication/links")
    public List<BottleneckLink> links() {
        return rules.links();
    }

    /** {@code {"sideA": "region=US", "sideB": "region=EU"}}: at most one copy of a file crosses it. */
    @PutMapping(path = "/replication/links/{name}", consumes = MediaType.ALL_VALUE)
    public BottleneckLink putLink(@PathVariable String name, HttpServletRequest http) throws IOException {
        Body b = Body.read(http, Set.of("sideA", "sideB"));
        return rules.putLink(name, b.string("sideA", true), b.string("sideB", true));
    }

    @DeleteMapping("/replication/links/{name}")
    public ResponseEntity<Void> deleteLink(@PathVariable String name) {
        if (!rules.deleteLink(name)) throw ReplicationRejected.notFound("link", "no link " + name);
        return ResponseEntity.noContent().build();
    }

    // ---- rules

    /**
     * {@code {"dataset", "copies", "sites", "source", "lifetime": "P30D", "schedule": "0 0 2 * * ?"}}: 201 with
     * {@code Location}. {@code sites} and {@code source} are site expressions; {@code lifetime} an ISO-8601 duration.
     * 400 when fewer sites match {@code sites} than {@code copies} asks for (none, say: a typo), as Rucio refuses it.
     * 409 when the account has the same rule (dataset, copies, sites, source, schedule) active already.
     */
    @PostMapping(path = "/replication/rules", consumes = MediaType.ALL_VALUE)
    public ResponseEntity<Rule> createRule(HttpServletRequest http) throws IOException {
        String owner = ApiUser.current().account();
        Body b = Body.read(http, Set.of("dataset", "copies", "sites", "source", "lifetime", "schedule"));
        Long copies = b.integer("copies");
        String lifetime = b.string("lifetime", false);
        Duration life = null;
        if (lifetime != null) {
            try {
                life = Duration.parse(lifetime);
            } catch (DateTimeParseException e) {
                throw BadInput.field("lifetime", "expected an ISO-8601 duration such as P30D or PT12H");
            }
        }
        visible(b.string("dataset", true));
        Rule r = rules.create(new NewRule(b.string("dataset", true), copies == null ? 1 : (int) Math.clamp(copies, Integer.MIN_VALUE, Integer.MAX_VALUE),
                b.string("sites", true), b.string("source", false), life, b.string("schedule", false), owner));
        return ResponseEntity.created(URI.create("/api/v1/replication/rules/" + r.id())).body(r);
    }

    static final int DEFAULT_RULE_PAGE = 1000, MAX_RULE_PAGE = 10_000;

    /**
     * Rules of the caller's experiments' datasets (of {@code dataset} only, when named), in id order, a page of at most
     * {@code limit} after rule {@code after}. When more follow, a {@code Link: <...>; rel="next"} header (as GitHub's)
     * names the next page; the body stays the list it always was. Filtered and cut in the query: the call read every
     * rule of the site and filtered them here.
     */
    @GetMapping("/replication/rules")
    public ResponseEntity<List<Rule>> rules(@RequestParam(required = false) String dataset,
                                            @RequestParam(required = false) String after,
                                            @RequestParam(required = false) String limit) {
        BadInput.noNul("dataset", dataset);
        long from = BadInput.longParam("after", after, 0, 0, Long.MAX_VALUE);
        int size = BadInput.intParam("limit", limit, DEFAULT_RULE_PAGE, 1, MAX_RULE_PAGE);
        ApiUser user = ApiUser.current();
        ReplicationRules.RulePage page = rules.list(dataset, user.allExperiments() ? null : user.experiments(), from, size);
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok();
        if (page.truncated()) {
            var next = org.springframework.web.util.UriComponentsBuilder.fromPath("/api/v1/replication/rules");
            if (dataset != null) next.queryParam("dataset", dataset);
            next.queryParam("after", page.rules().getLast().id()).queryParam("limit", size);
            ok.header(org.springframework.http.HttpHeaders.LINK, "<" + next.encode().build().toUriString() + ">; rel=\"next\"");
        }
        return ok.body(page.rules());
    }

    /** A rule and the completeness of its dataset at each site. */
    @GetMapping("/replication/rules/{id}")
    public Map<String, Object> rule(@PathVariable long id) {
        visibleRule(id);
        Rule r = rules.get(id).orElseThrow(() -> ReplicationRejected.notFound("rule", "no rule " + id));
        List<Completeness> c = rules.completeness(r.dataset()).stream().filter(x -> r.chosenSites().contains(x.site())).toList();
        return Map.of("rule", r, "completeness", c);
    }

    @DeleteMapping("/replication/rules/{id}")
    public ResponseEntity<Void> deleteRule(@PathVariable long id) {
        visibleRule(id);
        if (!rules.delete(id)) throw ReplicationRejected.notFound("rule", "no rule " + id);
        return ResponseEntity.noContent().build();
    }

    // ---- datasets and replicas

    @GetMapping("/datasets/{name}/completeness")
    public List<Completeness> completeness(@PathVariable String name) {
        visible(name);
        return rules.completeness(name);
    }

    @GetMapping("/datasets/{name}/replicas")
    public List<Replica> replicas(@PathVariable String name, @RequestParam(required = false) String site,
                                  @RequestParam(required = false) String state, @RequestParam(defaultValue = "0") int offset,
                                  @RequestParam(defaultValue = "1000") int limit) {
        if (offset < 0) throw BadInput.field("offset", "must not be negative");
        if (limit < 1 || limit > 10_000) throw BadInput.field("limit", "must be between 1 and 10000");
        BadInput.noNul("site", site);
        BadInput.noNul("state", state);
        visible(name);
        return rules.replicas(name, site, state, offset, limit);
    }

    static final int DEFAULT_HISTORY = 100, MAX_HISTORY = 10_000;

    /**
     * The history of a dataset's replicas (optionally at one site, of one file), newest first, at most {@code limit}:
     * each state change and failed attempt, with its error. Kept for {@code stagehand.replication.history-keep}.
     */
    @GetMapping("/datasets/{name}/replicas/history")
    public List<ReplicationRules.ReplicaEvent> history(@PathVariable String name, @RequestParam(required = false) String site,
                                                       @RequestParam(required = false) String file,
                                                       @RequestParam(required = false) String limit) {
        int size = BadInput.intParam("limit", limit, DEFAULT_HISTORY, 1, MAX_HISTORY);
        BadInput.noNul("site", site);
        BadInput.noNul("file", file);
        visible(name);
        return rules.history(name, site, file, size);
    }

    /**
     * {@code {"files": [...], "reason": "lost"|"bad: ..."}}: those replicas are made again (from another site or tape); one
     * on its way from tape is left to arrive and answered in {@code underway}.
     */
    @PostMapping(path = "/sites/{site}/replicas/declare", consumes = MediaType.ALL_VALUE)
    public Declared declare(@PathVariable String site, HttpServletRequest http) throws IOException {
        Body b = Body.read(http, Set.of("files", "reason"));
        String reason = b.string("reason", false);
        // kept on each replica as its last error and in its history: refused whole, not cut, so nothing is lost
        if (reason != null && reason.length() > BadInput.MAX_TEXT)
            throw BadInput.field("reason", "a text of at most " + BadInput.MAX_TEXT + " characters, got " + reason.length());
        return rules.declare(site, b.strings("files", true), reason);
    }

    /** {@code {"files": [...]}}: these files already exist at the site (verified replicas, sources for others). */
    @PostMapping(path = "/sites/{site}/replicas/register", consumes = MediaType.ALL_VALUE)
    public Map<String, Integer> register(@PathVariable String site, HttpServletRequest http) throws IOException {
        Body b = Body.read(http, Set.of("files"));
        return Map.of("registered", rules.register(site, b.strings("files", true)));
    }

    @PostMapping("/datasets/{name}/replicas/retry")
    public Map<String, Integer> retry(@PathVariable String name, @RequestParam(required = false) String site) {
        BadInput.noNul("site", site);
        visible(name);
        return Map.of("retried", rules.retryFailed(name, site));
    }

    // ---- schedules

    @GetMapping("/replication/schedules")
    public List<Schedule> schedules() {
        // each schedule's rule's experiment read in one query, of those rules only (it was every rule of the site)
        ApiUser user = ApiUser.current();
        List<Schedule> all = schedules.list();
        if (user.allExperiments()) return all;
        Map<Long, String> experiment = rules.experimentByRule(all.stream().map(Schedule::ruleId).toList());
        return all.stream().filter(s -> {
            String e = experiment.get(s.ruleId());
            return e != null && user.sees(e.isEmpty() ? null : e);
        }).toList();
    }

    @GetMapping("/replication/schedules/{ruleId}")
    public Map<String, Object> schedule(@PathVariable long ruleId) {
        visibleRule(ruleId);
        Schedule s = schedules.get(ruleId).orElseThrow(() -> ReplicationRejected.notFound("rule", "rule " + ruleId + " has no schedule"));
        return Map.of("schedule", s, "runs", schedules.runs(ruleId, 20));
    }

    @PostMapping("/replication/schedules/{ruleId}/pause")
    public ResponseEntity<Void> pause(@PathVariable long ruleId) {
        visibleRule(ruleId);
        schedules.pause(ruleId);
        return ResponseEntity.status(HttpStatus.NO_CONTENT).build();
    }

    @PostMapping("/replication/schedules/{ruleId}/resume")
    public ResponseEntity<Void> resume(@PathVariable long ruleId) {
        visibleRule(ruleId);
        schedules.resume(ruleId);
        return ResponseEntity.status(HttpStatus.NO_CONTENT).build();
    }

    @PostMapping("/replication/schedules/{ruleId}/trigger")
    public ResponseEntity<Void> trigger(@PathVariable long ruleId) {
        visibleRule(ruleId);
        schedules.triggerNow(ruleId);
        return ResponseEntity.status(HttpStatus.ACCEPTED).build();
    }

    // ---- experiments: an account sees the rules, replicas and schedules of its experiments' datasets only

    /** Whether the caller sees {@code dataset}'s experiment (an unknown dataset is left to the call: its own 404). */
    private boolean sees(String dataset) {
        ApiUser user = ApiUser.current();
        return user.allExperiments() || rules.experimentOf(dataset).map(e -> user.sees(e.isEmpty() ? null : e)).orElse(true);
    }

    /** A dataset of another experiment answers like an unknown one. */
    private void visible(String dataset) {
        if (dataset != null && !sees(dataset)) throw ReplicationRejected.notFound("dataset", "no dataset " + dataset);
    }

    /** A rule id that is not a number (or beyond a long) names no rule: 404 as an unknown one, as the API answers every id. */
    @InitBinder({"id", "ruleId"})
    void ruleIds(WebDataBinder binder) {
        NumericIds.register(binder, long.class, id -> ReplicationRejected.notFound("rule", "no rule " + BadInput.shown(id)));
    }

    /** A rule on another experiment's dataset answers like an unknown one (an unknown rule is left to the call). */
    private void visibleRule(long id) {
        if (rules.get(id).filter(r -> !sees(r.dataset())).isPresent()) {
            throw ReplicationRejected.notFound("rule", "no rule " + id);
        }
    }
}
