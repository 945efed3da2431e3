package dev.stagehand.console;

import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationSchedules;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/** The datasets page: completeness of each dataset at each site (OK / REPLICATING / STUCK and why), rules, schedules. */
@Controller
@RequestMapping("/console/datasets")
class DatasetsPage {

    private final ReplicationRules rules;
    private final ReplicationSchedules schedules;

    DatasetsPage(ReplicationRules rules, ReplicationSchedules schedules) {
        this.rules = rules;
        this.schedules = schedules;
    }

    @GetMapping({"", "/live"})
    String page(Model model, HttpServletRequest http) {
        model.addAttribute("matrix", rules.completenessAll());
        model.addAttribute("rules", rules.list(null));
        model.addAttribute("schedules", schedules.list());
        return LivePart.view("console/datasets", http);
    }
}
