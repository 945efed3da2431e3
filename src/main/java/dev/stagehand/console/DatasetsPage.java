package dev.stagehand.console;

import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationSchedules;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
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

    private final ReplicationRules rules;
    private final ReplicationSchedules schedules;

    DatasetsPage(ReplicationRules rules, ReplicationSchedules schedules) {
        this.rules = rules;
        this.schedules = schedules;
    }

    @GetMapping({"", "/live"})
    String page(Model model, HttpServletRequest http, Principal who) {
        ConsoleUser user = ConsoleUser.of(who);
        // a user of some experiments sees their datasets' rules only (each rule's experiment read in one query)
        Map<Long, String> experiment = user.siteWide() ? Map.of() : rules.experimentByRule();
        List<ReplicationRules.Rule> ruleList = rules.list(null).stream()
                .filter(r -> user.siteWide() || java.util.Optional.ofNullable(experiment.get(r.id())).map(user::sees).orElse(false))
                .toList();
        Set<Long> ruleIds = ruleList.stream().map(ReplicationRules.Rule::id).collect(Collectors.toSet());
        ReplicationRules.Matrix matrix = rules.completenessAll(user.scope(), MATRIX_ROWS);
        model.addAttribute("matrix", matrix.rows());
        model.addAttribute("matrixTruncated", matrix.truncated());
        model.addAttribute("matrixRows", MATRIX_ROWS);
        model.addAttribute("rules", ruleList);
        model.addAttribute("schedules", schedules.list().stream().filter(s -> ruleIds.contains(s.ruleId())).toList());
        return LivePart.view("console/datasets", http);
    }
}
