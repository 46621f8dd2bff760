"""The app's screens: dashboard, pickers, prompts, compare, drills, help."""
