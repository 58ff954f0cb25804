"""A user's memory to a file and back (`memstream export`, `memstream import`; issue #36).

`export` streams a user's tree, knowledge and window state as the records of
`contracts.backup_format`; `restore` writes such records back through the workers' commits
and indexes them with the workers' vectors; `renaming` gives the tree of one user to another
id. Both hold a page of records at a time, never the whole user.
"""
