"""Run directories, bug records and replay."""

from jgtest.report.records import BugRecord, BugRecordWriter, read_bug_records

__all__ = ["BugRecord", "BugRecordWriter", "read_bug_records"]
