"""Services that tie the parts together: doctor today; tasks, scheduler, model gateway, loop and
recovery as they land. May import every codeflux package except server and cli."""
