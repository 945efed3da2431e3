package dev.stagehand.console;

import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationSchedules;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/** The datasets page: completeness of each dataset at each site (OK / REPLICATING / STUCK and why), rules, schedules. */
@Controller
@RequestMapping("/console/datasets")
class DatasetsPage {

    /** Rows of the completeness matrix shown at most (the page refreshes every 2 s). */
    static final int MATRIX_ROWS = 5000;
    /** Rules shown at most (oldest first); the rest: GET /api/v1/replication/rules?after= (keyset pages), one dataset's: ?dataset=. */
    static final int RULE_ROWS = 1000;

    private final ReplicationRules rules;
    private final ReplicationSchedules schedules;

    DatasetsPage(ReplicationRules rules, ReplicationSchedules schedules) {
        this.rules = rules;
        this.schedules = schedules;
    }

    @GetMapping({"", "/live"})
    String page(Model model, HttpServletRequest http, Principal who) {
        ConsoleUser user = ConsoleUser.of(who);
        // a user of some experiments sees their datasets' rules only: filtered and cut in the query (every rule, and
        // every rule's experiment, was read at each refresh and filtered here)
        ReplicationRules.RulePage page = rules.list(user.scope(), RULE_ROWS);
        ReplicationRules.Matrix matrix = rules.completenessAll(user.scope(), MATRIX_ROWS);
        model.addAttribute("matrix", matrix.rows());
        model.addAttribute("matrixTruncated", matrix.truncated());
        model.addAttribute("matrixRows", MATRIX_ROWS);
        model.addAttribute("rules", page.rules());
        model.addAttribute("rulesTruncated", page.truncated());
        model.addAttribute("ruleRows", RULE_ROWS);
        // the API's rule list is keyset-paged by id: the hint names the page after the last rule shown
        model.addAttribute("rulesAfter", page.rules().isEmpty() ? 0 : page.rules().getLast().id());
        // the schedules of the rules shown (each a look-up in Quartz; listing them all did one per scheduled rule)
        model.addAttribute("schedules", page.rules().stream().filter(r -> r.schedule() != null)
                .flatMap(r -> schedules.get(r.id()).stream()).toList());
        return LivePart.view("console/datasets", http);
    }
}
