package dev.stagehand.console;

import dev.stagehand.cache.DiskCache;
import dev.stagehand.catalog.Volumes;
import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.RequestQuery;
import dev.stagehand.recall.StageRequests.RequestState;
import dev.stagehand.recall.StageRequests.StageRequestDetail;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.transfer.TransferJob;
import dev.stagehand.transfer.TransferQueue;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/**
 * The console pages. Each page has a {@code /live} fragment that htmx polls every 2 s, so counts move
 * without a reload. Changes are POSTs (CSRF-protected), go through the owning module's public API, and
 * are written to the audit log whatever their outcome.
 */
@Controller
@RequestMapping("/console")
class ConsoleController {

    private static final int PAGE = 50;

    private final ConsoleViews views;
    private final MountLog mounts;
    private final AuditLog audit;
    private final StageRequests requests;
    private final DiskCache cache;
    private final TransferQueue transfers;
    private final Volumes volumes;
    private final TapeLibrary library;
    private final TransferViews transferViews;

    ConsoleController(ConsoleViews views, MountLog mounts, AuditLog audit, StageRequests requests, DiskCache cache,
                      JdbcTemplate jdbc, Volumes volumes, TapeLibrary library, TransferViews transferViews) {
        this.views = views;
        this.mounts = mounts;
        this.audit = audit;
        this.requests = requests;
        this.cache = cache;
        this.transfers = new TransferQueue(jdbc);
        this.volumes = volumes;
        this.library = library;
        this.transferViews = transferViews;
    }


    @GetMapping("/login")
    String login() {
        return "console/login";
    }

    // ------------------------------------------------------------------------------------------ overview

    @GetMapping({"", "/overview/live"})
    String overview(Model model, HttpServletRequest http, Principal who) {
        // the overview is the site's; a user of some experiments starts at their requests
        if (!ConsoleUser.of(who).siteWide()) return "redirect:/console/requests";
        model.addAttribute("drives", views.drives());
        model.addAttribute("accessors", views.accessors());
        ConsoleViews.Overview figures = views.overview();
        model.addAttribute("queues", figures.queues());
        model.addAttribute("open", figures.open());
        model.addAttribute("requestCounts", figures.requestCounts());
        model.addAttribute("cache", cache.recentUsage());
        model.addAttribute("chart", Svg.throughput(figures.throughput()));
        model.addAttribute("now", Instant.now());
        model.addAttribute("figuresAsOf", figures.asOf());
        return LivePart.view("console/overview", http);
    }

    /**
     * An admin's action once a cache directory's disk is repaired: it was taken out of service (its staged copies could
     * not be forced to disk) and stays so, across restarts, until this.
     */
    @PostMapping("/cache/directories/{id}/in-service")
    String cacheDirectoryInService(@PathVariable int id, Principal who, RedirectAttributes flash) {
        var before = cache.putInService(id, who.getName());
        if (before.isEmpty()) {
            audit.record(who.getName(), "cache.in-service", "cache directory " + id, "no such directory", "refused");
            flash.addFlashAttribute("error", "No cache directory " + id + ".");
        } else {
            var d = before.get();
            String was = d.inService() ? "already in service" : "out of service since " + d.outOfServiceSince() + ": "
                    + d.outOfServiceReason();
            audit.record(who.getName(), "cache.in-service", d.path().toString(), was, "ok");
            flash.addFlashAttribute("message", "Cache directory " + d.path() + " is in service.");
        }
        return "redirect:/console";
    }

    // ------------------------------------------------------------------------------------------ timeline

    @GetMapping({"/timeline", "/timeline/live"})
    String timeline(@RequestParam(defaultValue = "15") int minutes, Model model, HttpServletRequest http) {
        int m = Math.clamp(minutes, 1, 24 * 60);
        Instant to = Instant.now();
        Instant from = to.minus(Duration.ofMinutes(m));
        List<MountLog.Mount> list = mounts.since(from);
        model.addAttribute("minutes", m);
        model.addAttribute("mounts", list.reversed().stream().limit(100).toList());
        model.addAttribute("svg", Svg.timeline(list, Svg.names(views.drives()), from, to));
        return LivePart.view("console/timeline", http);
    }

    // ------------------------------------------------------------------------------------------ requests

    @GetMapping({"/requests", "/requests/live"})
    String requestList(@RequestParam(required = false) String state, @RequestParam(required = false) String experiment,
                       @RequestParam(required = false) String owner, @RequestParam(defaultValue = "0") int offset, Model model,
                       HttpServletRequest http, Principal who) {
        RequestState s = null;
        if (state != null && !state.isBlank()) {
            try {
                s = RequestState.ofDb(state.trim());
            } catch (IllegalArgumentException e) {
                throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "unknown state '" + state + "'");
            }
        }
        // a NUL cannot reach PostgreSQL (it refused the query: a 500); no owner or experiment holds a control character
        for (String f : new String[] {experiment, owner}) {
            if (f != null && dev.stagehand.catalog.FileNames.hasControl(f))
                throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "no owner or experiment holds a control character");
        }
        var page = requests.list(new RequestQuery(s, blankToNull(experiment), blankToNull(owner), null, Math.max(0, offset), PAGE,
                ConsoleUser.of(who).scope()));
        model.addAttribute("page", page);
        model.addAttribute("state", state == null ? "" : state);
        model.addAttribute("experiment", experiment == null ? "" : experiment);
        model.addAttribute("owner", owner == null ? "" : owner);
        model.addAttribute("states", List.of("submitted", "active", "done", "failed", "cancelled"));
        return LivePart.view("console/requests", http);
    }

    @GetMapping({"/requests/{id}", "/requests/{id}/live"})
    String request(@PathVariable String id, @RequestParam(defaultValue = "0") int offset, Model model, HttpServletRequest http,
                   Principal who) {
        // another experiment's request is not found, exactly like an unknown id (as in the API)
        var r = requests.summary(uuid(id))
                .filter(s -> ConsoleUser.of(who).sees(s.experiment()))
                .orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND, "no request " + id));
        // read at each refresh: the page of files by place, the per-state counts from their running totals (V30)
        int from = Math.max(0, offset);
        var counts = requests.counts(r.id());
        model.addAttribute("d", new StageRequestDetail(r, counts.byState(), counts.released(),
                requests.files(r.id(), from, 100), from, 100));
        model.addAttribute("r", r);
        var eta = views.eta(r.id());
        model.addAttribute("eta", eta.at());
        model.addAttribute("etaUnknown", eta.unknown());
        return LivePart.view("console/request", http);
    }

    @PostMapping("/requests/{id}/cancel")
    String cancel(@PathVariable String id, Principal who, RedirectAttributes flash) {
        UUID uuid = uuid(id);
        if (!visible(uuid, who)) return refusedUnknown(who, "request.cancel", id, flash);
        try {
            var change = requests.cancel(uuid, null);
            audit.record(who.getName(), "request.cancel", id, change.changed() + " files cancelled", "ok");
            flash.addFlashAttribute("message", "Request cancelled: " + change.changed() + " files cancelled.");
        } catch (StageRequestRejected e) {
            audit.record(who.getName(), "request.cancel", id, e.getMessage(), "refused");
            flash.addFlashAttribute("error", e.getMessage());
        }
        return "redirect:/console/requests/" + id;
    }

    @PostMapping("/requests/{id}/priority")
    String priority(@PathVariable String id, @RequestParam String priority, Principal who, RedirectAttributes flash) {
        UUID uuid = uuid(id);
        if (!visible(uuid, who)) return refusedUnknown(who, "request.priority", id, flash);
        int p;
        try {
            p = Integer.parseInt(priority.trim());
        } catch (NumberFormatException e) {
            audit.record(who.getName(), "request.priority", id, "not a number: " + priority, "refused");
            flash.addFlashAttribute("error", "priority must be a whole number, got '" + priority + "'");
            return "redirect:/console/requests/" + id;
        }
        try {
            requests.changePriority(uuid, p);
            audit.record(who.getName(), "request.priority", id, "priority " + p, "ok");
            flash.addFlashAttribute("message", "Priority set to " + p + ".");
        } catch (StageRequestRejected e) {
            audit.record(who.getName(), "request.priority", id, e.getMessage(), "refused");
            flash.addFlashAttribute("error", e.getMessage());
        }
        return "redirect:/console/requests/" + id;
    }

    // ------------------------------------------------------------------------------------------ transfers

    @GetMapping({"/transfers", "/transfers/live"})
    String transfers(Model model, HttpServletRequest http) {
        List<TransferJob> active = transfers.recent(List.of("queued", "active"), 200);
        model.addAttribute("active", active);
        model.addAttribute("failed", transfers.recent(List.of("failed"), 200));
        model.addAttribute("links", transferViews.links());
        model.addAttribute("hosts", transferViews.hosts());
        model.addAttribute("optimizer", transferViews.optimizer());
        model.addAttribute("failureReasons", transferViews.failureReasons());
        return LivePart.view("console/transfers", http);
    }

    @PostMapping("/transfers/{id}/retry")
    String retry(@PathVariable long id, Principal who, RedirectAttributes flash) {
        if (transfers.retry(id)) {
            audit.record(who.getName(), "transfer.retry", "transfer " + id, "queued again", "ok");
            flash.addFlashAttribute("message", "Transfer " + id + " queued again.");
        } else {
            audit.record(who.getName(), "transfer.retry", "transfer " + id, "not a failed transfer", "refused");
            flash.addFlashAttribute("error", "Transfer " + id + " is not a failed transfer; nothing changed.");
        }
        return "redirect:/console/transfers";
    }

    // ------------------------------------------------------------------------------------------ volumes and drives

    @GetMapping("/volumes")
    String volumes(@RequestParam(defaultValue = "") String q, Model model) {
        if (q.indexOf('\0') >= 0) throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "no volume label holds a NUL character");
        model.addAttribute("q", q);
        model.addAttribute("volumes", volumes.list(q, 500));
        model.addAttribute("drives", views.drives());
        return "console/volumes";
    }

    @PostMapping("/volumes/{label}/state")
    String volumeState(@PathVariable String label, @RequestParam String state, @RequestParam(defaultValue = "") String reason,
                       Principal who, RedirectAttributes flash) {
        Volumes.State s;
        try {
            s = Volumes.State.parse(state);
        } catch (IllegalArgumentException e) {
            audit.record(who.getName(), "volume.state", label, e.getMessage(), "refused");
            flash.addFlashAttribute("error", e.getMessage());
            return "redirect:/console/volumes";
        }
        if (reason.indexOf('\0') >= 0) { // PostgreSQL refuses a NUL in the stored reason and the audit line: a 500
            audit.record(who.getName(), "volume.state", label, "the reason holds a NUL character", "refused");
            flash.addFlashAttribute("error", "A reason cannot hold a NUL character; nothing changed.");
            return "redirect:/console/volumes";
        }
        String detail = s.dbName() + (reason.isBlank() ? "" : " (" + reason.strip() + ")");
        if (volumes.setState(label, s, reason)) {
            audit.record(who.getName(), "volume.state", label, detail, "ok");
            flash.addFlashAttribute("message", "Volume " + label + " is now " + s.dbName() + ".");
        } else {
            audit.record(who.getName(), "volume.state", label, "no such volume", "refused");
            flash.addFlashAttribute("error", "No volume " + label + ".");
        }
        return "redirect:/console/volumes";
    }

    @PostMapping("/drives/{name}/enabled")
    String driveEnabled(@PathVariable String name, @RequestParam boolean enabled, Principal who, RedirectAttributes flash) {
        return driveAction(enabled ? "drive.enable" : "drive.disable", name, who, flash, () -> {
            library.setEnabled(name, enabled);
            return enabled ? "enabled" : "disabled";
        });
    }

    /** After a repair: a FAILED drive is EMPTY again, its stuck cartridge back in its slot (the schedulers use it again). */
    @PostMapping("/drives/{name}/recover")
    String driveRecover(@PathVariable String name, Principal who, RedirectAttributes flash) {
        return driveAction("drive.recover", name, who, flash, () -> {
            library.recover(name);
            return "recovered";
        });
    }

    private String driveAction(String action, String name, Principal who, RedirectAttributes flash,
                               java.util.function.Supplier<String> change) {
        try {
            String done = change.get();
            audit.record(who.getName(), action, name, done, "ok");
            flash.addFlashAttribute("message", "Drive " + name + " " + done + ".");
        } catch (RuntimeException e) { // not in that state, or no such drive
            audit.record(who.getName(), action, name, e.getMessage(), "refused");
            flash.addFlashAttribute("error", "Drive " + name + ": " + e.getMessage());
        }
        return "redirect:/console/volumes";
    }

    // ------------------------------------------------------------------------------------------ audit (datasets: DatasetsPage)

    @GetMapping("/audit")
    String audit(Model model) {
        model.addAttribute("entries", audit.recent(500));
        return "console/audit";
    }

    /** Whether the request exists and is of one of the user's experiments. */
    private boolean visible(UUID id, Principal who) {
        return requests.summary(id).map(r -> ConsoleUser.of(who).sees(r.experiment())).orElse(false);
    }

    /** A change to a request the user cannot see: refused and audited as if there were no such request. */
    private String refusedUnknown(Principal who, String action, String id, RedirectAttributes flash) {
        audit.record(who.getName(), action, id, "no such request (or another experiment's)", "refused");
        flash.addFlashAttribute("error", "No request " + id + ".");
        return "redirect:/console/requests";
    }

    private static UUID uuid(String id) {
        try {
            return UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            throw new ResponseStatusException(HttpStatus.NOT_FOUND, "no request " + id);
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }
}
