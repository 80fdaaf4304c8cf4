"""The trace-driven simulator: the decision core run on a simulated clock.

``engine`` steps an event clock and calls ``starburst.core.cycle.schedule_pass`` exactly as the
controller does; ``cluster`` and ``cloud`` are the in-memory implementations of the core's
ports; ``trace``, ``formats`` and ``synthetic`` produce job lists; ``report`` turns outcomes
into the figures the paper reports; ``sweep``, ``pareto`` and ``optimum`` compare policies;
``tune``, ``recommend``, ``notes`` and ``naming`` choose and explain a setting, and ``history``
brings the live store's history (jobs, cluster shape, today's setting) to them.
"""
