"""The report's building blocks: one MLflow run as plain records (`records`), the blocks a report page is made of and
the estimate rows its charts are drawn from (`blocks`), and the figures as PNG (`plots`). The components draw their
report charts with them; `prefcraft.html_report` reads the store and lays the page out."""
