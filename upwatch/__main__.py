from upwatch.cli import main

main()
