-- The task list, newest first with keyset paging (TaskService/ListTasks, codeflux/store/task_records.py
-- list_task_records): a page reads tasks in (created_at_us, id) order, descending, from a cursor — of every
-- repository or of one. Without these a page sorted the whole table (about 80 ms at 20,000 tasks; about 1 ms
-- with them). A search by words still reads every row (id, title and requirement are matched by substring).

CREATE INDEX tasks_by_creation ON tasks (created_at_us, id);
CREATE INDEX tasks_of_repository_by_creation ON tasks (repository_id, created_at_us, id);
