"""Reading dialogue files (Concord JSON lines and CSV; DailyDialog++, GRADE, FED/DSTC10) into
plain records. Writing them to the database is ``studies.corpora.services.dialogues_import``."""
