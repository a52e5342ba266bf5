"""Authoring tools, for the people who write the course, not for learners.

    python -m tools.execute   # (make execute) re-run lessons, store their outputs
    python -m tools.student   # (make student) write the student copies
    python -m tools.bench     # (make bench) time every lesson against the budgets

They live outside `course_utils`, so `import course_utils` shows learners only what the lessons
use. Run them from the course folder (the make targets do).
"""
